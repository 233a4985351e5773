// `corral load` against the real daemon and corral-target: the closed and open models, the
// summary and --out file, thresholds deciding the exit code, abort_on_fail, stopping a test
// through the API, and refusals naming the field at fault. Each test is bounded: a few
// seconds of load at a few thousand requests per second at most.
#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <iterator>
#include <regex>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"

using namespace corral::test;

namespace {

std::string write_file(const TempHome& home, const std::string& name, const Json& doc) {
  std::ofstream(home.file(name)) << doc.dump();
  return home.file(name);
}

Json get_scenario(const std::string& base, const std::string& path, const Json& load) {
  Json s = {{"name", "one get"},
            {"vars", {{"base", base}}},
            {"steps", Json::array({{{"name", "get"}, {"request", {{"url", "{{base}}" + path}}}}})}};
  if (!load.is_null()) s["load"] = load;
  return s;
}

}  // namespace

TEST_CASE("load cli: a closed model runs its VUs for the duration, passes its thresholds, exits 0") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  const std::string file = write_file(
      home, "closed.json",
      get_scenario(api.base(), "/delay?ms=5",
                   {{"vus", 4}, {"duration", "2s"},
                    {"thresholds", {{"errors", {"rate < 1%"}}, {"latency", {"p99 < 10s"}}}}}));
  const std::string out = home.file("out.json");
  CliResult r = run_cli({"load", file, "--out", out}, home.path(), {}, seconds(60));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("state      : passed"));
  CHECK_THAT(r.out, Catch::Contains("ok      errors: rate < 1%"));
  Json j = Json::parse(std::ifstream(out), nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["state"] == "passed");
  CHECK(j["model"] == "closed");
  CHECK(j["workers"] == 2);
  CHECK(j["vus_max"] == 4);
  // 4 VUs, each request at least 5 ms: at most 4 * 2000 / 5 requests, and at least some.
  const auto requests = j["requests"].get<uint64_t>();
  CHECK(requests <= 1600 + 4);
  CHECK(requests >= 100);
  CHECK(j["iterations"]["passed"] == requests);
  CHECK(j["errors"]["count"] == 0);
  CHECK(j["latency"]["min"].get<double>() >= 4.0);  // ms; the server's timer counts whole ms
  CHECK(j["series"].size() >= 2);
  CHECK(j["series"][0]["t"] == 0);
  // The target saw every request the test counted.
  CHECK(api.stats()["requests"].get<uint64_t>() == requests);
}

TEST_CASE("load cli: an open model starts exactly rate x duration arrivals, and --out has them") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  const std::string file =
      write_file(home, "open.json", get_scenario(api.base(), "/delay?ms=1", nullptr));
  const std::string out = home.file("out.json");
  CliResult r = run_cli({"load", file, "--rate", "500", "--duration", "2s", "--max-vus", "50",
                         "--threshold", "dropped: count < 1", "--out", out},
                        home.path(), {}, seconds(60));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  Json j = Json::parse(std::ifstream(out), nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["model"] == "open");
  CHECK(j["corrected"] == true);
  CHECK(j["iterations"]["passed"] == 1000);
  CHECK(j["requests"] == 1000);
  CHECK(j["start_lateness"]["count"] == 1000);
  CHECK(j["latency"]["p50"].get<double>() >= j["latency_raw"]["p50"].get<double>());
  CHECK_THAT(r.out, Catch::Contains("(from the intended start)"));
}

TEST_CASE(
    "load cli: a crossed threshold fails the test, exit 1, and says which, and a flag's "
    "thresholds replace the file's for their metric") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  // The file's errors threshold would hold; the flag's replaces it. Its latency one stays.
  const std::string file = write_file(
      home, "failing.json",
      get_scenario(
          api.base(), "/fail?status=503",
          {{"vus", 2},
           {"duration", "1s"},
           {"thresholds", {{"errors", {"count < 1000000"}}, {"latency", {"p99 < 10s"}}}}}));
  const std::string junit = home.file("load.xml");
  CliResult r = run_cli({"load", file, "--threshold", "errors: rate < 1%", "--threshold",
                         "latency{step:get}: p99 < 10s", "--junit", junit},
                        home.path(), {}, seconds(60));
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("state      : failed"));
  CHECK_THAT(r.out, Catch::Contains("CROSSED errors: rate < 1%  (100.00%)"));
  CHECK_THAT(r.out, Catch::Contains("ok      latency{step:get}: p99 < 10s"));
  CHECK_THAT(r.out, Catch::Contains("ok      latency: p99 < 10s"));  // the file's, kept
  CHECK_THAT(r.out, !Catch::Contains("count < 1000000"));            // replaced by the flag
  CHECK_THAT(r.out, Catch::Contains("status"));  // the errors' class
  // Each threshold is a testcase; the crossed one fails.
  std::ifstream in(junit);
  const std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(xml, Catch::Contains("tests=\"4\" failures=\"1\""));
  CHECK_THAT(xml, Catch::Contains("name=\"errors: rate &lt; 1%\""));
  CHECK_THAT(xml, Catch::Contains("<failure message=\"crossed: the value was 100.00%\""));
  CHECK_THAT(xml, Catch::Contains("name=\"latency{step:get}: p99 &lt; 10s\""));
}

TEST_CASE("load cli: abort_on_fail ends the test early, as aborted") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json load = {{"vus", 2},
               {"duration", "60s"},
               {"thresholds",
                {{"errors", {{{"threshold", "count < 5"}, {"abort_on_fail", true}}}}}}};
  const std::string file =
      write_file(home, "abort.json", get_scenario(api.base(), "/fail?status=500", load));
  const auto t0 = Clock::now();
  CliResult r = run_cli({"load", file}, home.path(), {}, seconds(50));
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("state      : aborted (aborted: errors: count < 5 crossed)"));
  CHECK(Clock::now() - t0 < seconds(45));  // it did not run its 60 s
}

TEST_CASE("load api: DELETE stops a running test, which ends as stopped") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json body = {{"scenario", get_scenario(api.base(), "/delay?ms=10", nullptr)},
               {"load", {{"vus", 2}, {"duration", "60s"}, {"grace", "1s"}}}};
  ApiResponse created = d.api("POST", "/loads", body.dump());
  REQUIRE(created.status == 201);
  const std::string id = Json::parse(created.body)["load"];
  d.wait_until([&] { return d.api("GET", "/loads/" + id).json["requests"] > 10; }, seconds(10),
               "the test to send some requests");
  ApiResponse stopped = d.api("DELETE", "/loads/" + id);
  CHECK(stopped.status == 200);
  d.wait_until([&] { return d.api("GET", "/loads/" + id).json["state"] != "running"; },
               seconds(10), "the test to end");
  Json j = Json::parse(d.api("GET", "/loads/" + id).body);
  CHECK(j["state"] == "stopped");
  CHECK_THAT(j["reason"].get<std::string>(), Catch::Contains("stopped by request"));
  Json list = Json::parse(d.api("GET", "/loads").body);
  REQUIRE(list["loads"].size() == 1);
  CHECK(list["loads"][0]["id"] == id);
  CHECK_FALSE(list["loads"][0].contains("series"));
  // `corral runs` lists it under the runs, and `corral show` prints its summary.
  CliResult runs = run_cli({"runs"}, home.path());
  INFO(runs.describe());
  CHECK(runs.exit_code == 0);
  CHECK_THAT(runs.out, Catch::Contains("load tests:"));
  CHECK(std::regex_search(runs.out, std::regex("\\| " + id + " +\\| one get +\\| closed +\\| stopped ")));
  CliResult show = run_cli({"show", id}, home.path());
  CHECK(show.exit_code == 0);
  CHECK_THAT(show.out, Catch::Contains("load       : " + id + "\n"));
  CHECK_THAT(show.out, Catch::Contains("state      : stopped (stopped by request)"));
  CliResult instance = run_cli({"show", id + "/0"}, home.path());
  CHECK(instance.exit_code == 2);
  CHECK_THAT(instance.err, Catch::Contains(id + " is a load test, which has no instances"));
}

TEST_CASE("load api: load test ids go on after the daemon restarts, as run ids do") {
  TempHome home;
  JobApi api;
  Json body = {{"scenario", get_scenario(api.base(), "/delay?ms=10", nullptr)},
               {"load", {{"vus", 1}, {"duration", "1s"}}}};
  std::vector<std::string> ids;
  for (int daemon = 0; daemon < 2; ++daemon) {
    Daemon d(home, DaemonOptions().with_workers(1));
    d.wait_ready(1);
    for (int k = 0; k < 2; ++k) {
      ApiResponse created = d.api("POST", "/loads", body.dump());
      REQUIRE(created.status == 201);
      ids.push_back(Json::parse(created.body)["load"]);
    }
    d.signal(SIGTERM);
    CHECK(d.wait_exit(seconds(20)) == 0);
  }
  REQUIRE(ids.size() == 4);
  for (size_t k = 0; k < ids.size(); ++k) {
    CHECK_THAT(ids[k], Catch::StartsWith("l" + std::to_string(k + 1) + "-"));
  }
}

TEST_CASE("load api: a wrong load section is refused with the field at fault, and runs nothing") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"load_connections_per_worker", 10}}));
  d.wait_ready(1);
  const Json scenario = get_scenario(api.base(), "/delay?ms=1", nullptr);
  const std::vector<std::pair<Json, std::string>> cases = {
      {{{"scenario", scenario}}, "load: missing"},
      {{{"scenario", scenario}, {"load", {{"vus", 0}, {"duration", "1s"}}}},
       "load.vus: expected a whole number from 1"},
      {{{"scenario", scenario},
        {"load", {{"vus", 1}, {"duration", "1s"}, {"thresholds", {{"latency{step:nope}", {"p99 < 1s"}}}}}}},
       "no step is named"},
      {{{"scenario", scenario}, {"load", {{"connections", 1000}, {"pace", "1s"}, {"duration", "1s"}}}},
       "load.connections: 1000 held connections need 100 workers; at most 64"},
  };
  for (const auto& [body, message] : cases) {
    ApiResponse r = d.api("POST", "/loads", body.dump());
    INFO(r.body);
    CHECK(r.status == 400);
    CHECK_THAT(r.body, Catch::Contains(message));
  }
  const std::string file = write_file(home, "noload.json", scenario);
  CliResult r = run_cli({"load", file}, home.path());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no \"load\" section"));
  // A mistake in a flag's threshold is the flag's, not the file's.
  const std::string with_load = write_file(
      home, "withload.json", get_scenario(api.base(), "/", {{"vus", 1}, {"duration", "1s"}}));
  CliResult typo = run_cli({"load", with_load, "--threshold", "latncy: p99 < 5ms"}, home.path());
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err,
             Catch::Contains("corral: --threshold \"latncy: p99 < 5ms\": unknown metric"));
  CHECK_THAT(typo.err, !Catch::Contains("withload.json"));
  CHECK(api.stats()["requests"] == 0);
}

TEST_CASE("load cli: held connections stay open one per VU, on more workers than the daemon had") {
  TempHome home;
  JobApi api;
  // 10 connections per worker: 25 need 3 workers, and the daemon has 1.
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"load_connections_per_worker", 10}}));
  d.wait_ready(1);
  const std::string file =
      write_file(home, "held.json", get_scenario(api.base(), "/status/held", nullptr));
  CliResult r = run_cli({"load", file, "--connections", "25", "--pace", "200ms", "--duration",
                         "3s", "--detach"},
                        home.path(), {}, seconds(60));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("on 3 workers"));
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex("load (l[0-9a-z-]+)")));
  const std::string id = m[1];
  // The target holds the 25 connections (and the one asking) while the test runs.
  d.wait_until([&] { return api.stats()["connections"].get<uint64_t>() >= 26; }, seconds(10),
               "the target to hold 25 connections");
  d.wait_until([&] { return d.api("GET", "/loads/" + id).json["state"] != "running"; },
               seconds(20), "the test to end");
  Json j = d.api("GET", "/loads/" + id).json;
  CHECK(j["state"] == "passed");
  CHECK(j["model"] == "held");
  CHECK(j["workers"] == 3);
  CHECK(j["connections"]["max"] == 25);
  CHECK(j["connections"]["opened"] == 25);
  CHECK(j["connections"]["closed"] == 0);
  CHECK(j["connections"]["failed"] == 0);
  // Each connection's VU starts within the first pace and then every 200 ms: 15 in 3 s.
  CHECK(j["requests"] == 25 * 15);
  CHECK(api.stats()["requests"] == 25 * 15);
  // Released at the end, and the daemon goes back to its one worker.
  d.wait_until([&] { return api.stats()["connections"].get<uint64_t>() <= 1; }, seconds(10),
               "the held connections to close");
  d.wait_until([&] { return d.workers().size() == 1; }, seconds(30),
               "the daemon to go back to 1 worker");
}

TEST_CASE("load cli: --watch-pid and --watch-url read the target, and --stop-when ends the test") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const std::string file =
      write_file(home, "watched.json", get_scenario(api.base(), "/delay?ms=2", nullptr));
  const std::string out = home.file("out.json");
  CliResult r = run_cli({"load", file, "--vus", "2", "--duration", "60s", "--grace", "1s",
                         "--watch-pid", std::to_string(api.pid()), "--watch-url",
                         api.base() + "/metrics", "--stop-when",
                         "target.corral_target_requests_total > 300", "--out", out},
                        home.path(), {}, seconds(60));
  INFO(r.describe());
  CHECK(r.exit_code == 1);  // stopped before its end
  CHECK_THAT(r.out, Catch::Contains("state      : stopped (stop_when "
                                    "target.corral_target_requests_total > 300: "));
  CHECK_THAT(r.out, Catch::Contains("target     : pid " + std::to_string(api.pid())));
  CHECK_THAT(r.out, Catch::Contains("crossed target.corral_target_requests_total > 300 at "));
  Json j = Json::parse(std::ifstream(out), nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["state"] == "stopped");
  CHECK(j["elapsed_s"].get<double>() < 30);
  const Json& target = j["target"];
  CHECK(target["event"]["event"] == "crossed");
  CHECK(target["event"]["value"].get<double>() > 300);
  CHECK(target["rss_max"].get<double>() > 1e6);
  REQUIRE(target["series"].size() >= 1);
  const Json& last = target["series"].back();
  CHECK(last["up"] == true);
  CHECK(last["threads"].get<int>() >= 1);
  CHECK(last["fds"].get<int>() >= 3);
  CHECK(last.contains("corral_target_requests_total"));
}

TEST_CASE("load api: a watched target that dies ends the test as aborted, and says when") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json body = {{"scenario", get_scenario(api.base(), "/delay?ms=2", nullptr)},
               {"load", {{"vus", 2}, {"duration", "60s"}, {"grace", "1s"},
                         {"watch", {{"pid", api.pid()}}}}}};
  ApiResponse created = d.api("POST", "/loads", body.dump());
  REQUIRE(created.status == 201);
  const std::string id = Json::parse(created.body)["load"];
  d.wait_until([&] { return d.api("GET", "/loads/" + id).json["requests"] > 50; }, seconds(10),
               "the test to send some requests");
  const int pid = api.pid();
  api.kill_now();
  d.wait_until([&] { return d.api("GET", "/loads/" + id).json["state"] != "running"; },
               seconds(10), "the test to end");
  Json j = d.api("GET", "/loads/" + id).json;
  CHECK(j["state"] == "aborted");
  CHECK_THAT(j["reason"].get<std::string>(),
             Catch::Contains("the target (pid " + std::to_string(pid) + ") is gone at "));
  CHECK(j["target"]["event"]["event"] == "died");
  CHECK(j["target"]["last"]["up"] == false);
}

TEST_CASE("load cli: --find-max steps the rate up to where arrivals are dropped") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  // 8 VUs and 50 ms per request: 160 iterations/s at most. The steps (x3: 30, 90, 270) keep
  // far from it on both sides, so that a busy machine's slower answers cannot move the knee:
  // 90/s keeps the VUs 56 % busy, 270/s asks for 169 % of them.
  const std::string file = write_file(
      home, "knee.json",
      get_scenario(api.base(), "/delay?ms=50",
                   {{"rate", 30}, {"max_vus", 8}, {"duration", "1m"}, {"grace", "1s"}}));
  const std::string out = home.file("knee.out.json");
  CliResult r = run_cli({"load", file, "--find-max", "--step-duration", "1s", "--step-factor",
                         "3", "--out", out},
                        home.path(), {}, seconds(90));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("highest sustainable load: 90 iterations/s"));
  CHECK_THAT(r.out, Catch::Contains("broke first: dropped "));
  Json j = Json::parse(std::ifstream(out), nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j["steps"].size() == 3);  // 30, 90, 270
  CHECK(j["broke"] == 2);
  CHECK(j["highest"]["target"] == 90);
  CHECK(j["highest"]["dropped_rate"] == 0.0);
  CHECK(j["steps"][2]["dropped_rate"].get<double>() > 0.1);
  // Each step was a test of its own, one second long.
  Json list = Json::parse(d.api("GET", "/loads").body);
  CHECK(list["loads"].size() == 3);
  // The step past the bounds ended failed (they are its thresholds), the others passed.
  int failed = 0;
  for (const Json& t : list["loads"]) failed += t["state"] == "failed" ? 1 : 0;
  CHECK(failed == 1);

  // The bounds take units as thresholds do: 50 ms answers break a 20ms p99 at the first step.
  CliResult p99 = run_cli({"load", file, "--find-max", "--step-duration", "3s", "--max-p99", "20ms",
                           "--max-errors", "1%"},
                          home.path(), {}, seconds(60));
  INFO(p99.describe());
  CHECK(p99.exit_code == 1);  // no step held
  CHECK_THAT(p99.out, Catch::Contains("> 20.0ms"));
  // Into a pipe, the step's live line comes once a second while it runs.
  CHECK_THAT(p99.out, Catch::Matches(
                          R"((.|\n)*\nl4-[0-9a-f]{4}  running  [12]s/3s  vus [0-9]+  rps(.|\n)*)"));
  for (const auto& [flag, value] : {std::pair{"--max-p99", "5x"}, {"--max-errors", "150%"}}) {
    CliResult bad = run_cli({"load", file, "--find-max", flag, value}, home.path());
    INFO(bad.describe());
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains(std::string(flag) + " " + value + ": expected"));
  }
}

TEST_CASE("load cli: --html writes a report that headless Chromium draws with its charts") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const std::string file = write_file(
      home, "report.json",
      get_scenario(api.base(), "/delay?ms=2",
                   {{"model", "held"}, {"pace", "100ms"}, {"start", 0},
                    {"stages", Json::array({{{"duration", "3s"}, {"target", 40}},
                                            {{"duration", "2s"}, {"target", 40}}})},
                    {"thresholds", {{"latency", {"p99 < 1ms"}}}}}));
  const std::string html = home.file("report.html");
  CliResult r = run_cli({"load", file, "--watch-pid", std::to_string(api.pid()), "--html", html},
                        home.path(), {}, seconds(60));
  INFO(r.describe());
  CHECK(r.exit_code == 1);  // the 1 ms threshold is crossed: the report shows it
  CHECK_THAT(r.out, Catch::Contains("html       : " + html));
  std::ifstream in(html);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("<tr class=\"crossed\"><td>CROSSED</td><td>latency: p99 &lt; 1ms"));
  CHECK_THAT(text, Catch::Contains("data-chart=\"target\""));
  // Chromium opens it offline, builds the charts and draws their lines.
  CliResult shown = run_program("/usr/bin/python3", {CORRAL_HTML_CHECK, html}, home.path(), {},
                                seconds(120));
  INFO(shown.describe());
  CHECK(shown.exit_code == 0);
}

TEST_CASE(
    "load cli: with no worker ready the test cannot start: exit 4, not the code of a crossed "
    "threshold") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  CliResult none = run_cli({"scale", "0"}, home.path());
  INFO(none.describe());
  REQUIRE(none.exit_code == 0);
  CHECK_THAT(none.err, Catch::Contains("note: with 0 workers nothing runs"));
  d.wait_until([&] { return d.workers().empty(); }, seconds(20), "no worker left");
  const std::string file = write_file(
      home, "closed.json", get_scenario(api.base(), "/", {{"vus", 1}, {"duration", "1s"}}));
  CliResult r = run_cli({"load", file}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.err, Catch::Contains("no worker is ready to run a load test"));
  CHECK(api.stats()["requests"] == 0);
}
