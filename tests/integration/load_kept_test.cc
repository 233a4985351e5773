// Kept load tests against the real daemon and corral-target: tests that ended survive a daemon
// restart (corral runs, GET /loads, corral show, corral report writing the same --out again),
// corral compare and --baseline say what regressed, and retention forgets beyond keep_runs.
#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <regex>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"

using namespace corral::test;

namespace {

// A closed-model test of `path` on the job API, for a second and a half.
std::string scenario_file(const TempHome& home, const std::string& name, const std::string& url) {
  Json s = {{"name", "kept"},
            {"steps", Json::array({{{"name", "get"}, {"request", {{"url", url}}}}})},
            {"load", {{"vus", 2}, {"duration", "1500ms"}}}};
  std::ofstream(home.file(name)) << s.dump();
  return home.file(name);
}

// Runs `corral load` with `args`; returns the test's id (and the result in `r`).
std::string run_load(const TempHome& home, std::vector<std::string> args, CliResult& r) {
  args.insert(args.begin(), "load");
  r = run_cli(args, home.path(), {}, seconds(60));
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex("load (l[0-9]+-[0-9a-z]+)"))) return "";
  return m[1];
}

Json read_json(const std::string& path) { return Json::parse(std::ifstream(path), nullptr, false); }

}  // namespace

TEST_CASE("kept loads: tests survive a restart, report the same again, and compare") {
  TempHome home;
  JobApi api;
  const DaemonOptions opts = DaemonOptions().with_workers(1);
  auto d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(1);
  const std::string fast = scenario_file(home, "fast.json", api.base() + "/delay?ms=5");
  const std::string slow = scenario_file(home, "slow.json", api.base() + "/delay?ms=10");
  CliResult r;
  const std::string a = run_load(home, {fast, "--out", home.file("a.json")}, r);
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  const std::string b = run_load(home, {slow, "--out", home.file("b.json")}, r);
  REQUIRE(r.exit_code == 0);
  // A test still running when the daemon stops ends as stopped, and is kept too.
  const std::string cut = run_load(home, {fast, "--duration", "60s", "--detach"}, r);
  REQUIRE(r.exit_code == 0);
  d->wait_until([&] { return d->api("GET", "/loads/" + cut).json["series"].size() >= 1; },
                seconds(10), "the test to run a second");

  d->signal(SIGTERM);  // a restart: the tests are read back from the journal
  REQUIRE(d->wait_exit(seconds(20)) == 0);
  d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(1);
  Json list = d->api("GET", "/loads").json;
  REQUIRE(list["loads"].size() == 3);
  CHECK(list["loads"][0]["id"] == cut);  // newest first
  CHECK(list["loads"][1]["id"] == b);
  CHECK(list["loads"][2]["id"] == a);
  CHECK(list["loads"][2]["series"].is_null());  // a list holds no series
  CHECK(list["loads"][0]["state"] == "stopped");
  CHECK_THAT(list["loads"][0]["reason"].get<std::string>(),
             Catch::Contains("the daemon is stopping"));
  CHECK(d->api("GET", "/loads/" + cut).json["series"].size() >= 1);
  CliResult runs = run_cli({"runs"}, home.path());
  CHECK_THAT(runs.out, Catch::Contains(a) && Catch::Contains(b));
  CliResult show = run_cli({"show", a}, home.path());
  INFO(show.describe());
  CHECK(show.exit_code == 0);
  CHECK_THAT(show.out, Catch::Contains("state      : passed"));

  // The report written again is the one written when the test ended.
  CliResult report = run_cli({"report", a, "--out", home.file("a2.json"), "--html",
                              home.file("a.html"), "--junit", home.file("a.xml")},
                             home.path());
  INFO(report.describe());
  REQUIRE(report.exit_code == 0);
  CHECK(read_json(home.file("a2.json")) == read_json(home.file("a.json")));
  CHECK(read_json(home.file("a2.json"))["series"].size() >= 1);
  // Its slowest requests, each with the trace id to find it by in the server's traces.
  const Json slowest = read_json(home.file("a.json"))["slowest"];
  REQUIRE(slowest.size() == 10);
  CHECK(slowest[0]["ms"].get<double>() >= 5.0);
  CHECK(std::regex_match(slowest[0]["trace_id"].get<std::string>(), std::regex("[0-9a-f]{32}")));
  std::ifstream html(home.file("a.html"));
  CHECK(std::string(std::istreambuf_iterator<char>(html), {}).find("<svg") != std::string::npos);
  CliResult unknown = run_cli({"report", "l999-zzzz"}, home.path());
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("no load test \"l999-zzzz\""));

  // Twice the delay: p50, p90 and p99 regressed; the same test against itself did not.
  CliResult worse = run_cli({"compare", a, b}, home.path());
  INFO(worse.describe());
  CHECK(worse.exit_code == 1);
  CHECK_THAT(worse.out, Catch::Contains("REGRESSED") && Catch::Contains("verdict: regressed"));
  CliResult same = run_cli({"compare", home.file("a.json"), a}, home.path());  // a file, an id
  INFO(same.describe());
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.out, Catch::Contains("verdict: no regression"));

  // A new test against a baseline: exit 1 when it regressed, with a JUnit case per limit.
  const std::string junit = home.file("c.xml");
  const std::string c = run_load(home,
                                 {slow, "--baseline", a, "--max-regression", "p99: +20%",
                                  "--max-regression", "rps: -90%", "--junit", junit},
                                 r);
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("regressed: p99: +20%"));
  std::ifstream xml(junit);
  const std::string text(std::istreambuf_iterator<char>(xml), {});
  CHECK_THAT(text, Catch::Contains("classname=\"kept.baseline\" name=\"p99: +20%\""));
  CHECK_THAT(text, Catch::Contains("<failure message=\"p99 went from"));
  CHECK_THAT(text, Catch::Contains("name=\"rps: -90%\""));
  CliResult missing = run_cli({"load", fast, "--baseline", "l999-zzzz"}, home.path());
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("--baseline: l999-zzzz: no load test \"l999-zzzz\""));
}

TEST_CASE("kept loads: retention keeps the newest keep_runs tests") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"keep_runs", 2}}));
  d.wait_ready(1);
  const std::string file = scenario_file(home, "s.json", api.base() + "/delay?ms=1");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    CliResult r;
    ids.push_back(run_load(home, {file, "--duration", "500ms"}, r));
    INFO(r.describe());
    REQUIRE(r.exit_code == 0);
  }
  d.wait_until([&] { return d.api("GET", "/loads").json["loads"].size() == 2; }, seconds(10),
               "the oldest test to be forgotten");
  CHECK(d.api("GET", "/loads/" + ids[0]).status == 404);
  CHECK(d.api("GET", "/loads/" + ids[2]).status == 200);
}
