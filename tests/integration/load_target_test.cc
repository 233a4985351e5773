// A load test's target started by corral (a load section's "target", --target-cmd): started
// before the test and ready first, watched, stopped after; its death ends the test with how,
// why and its last lines; a target that is not ready refuses the test; and a daemon killed
// outright leaves no target behind.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <regex>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"

using namespace corral::test;

namespace {

// A port nothing listens on now: bound to port 0, read, and let go.
int unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

Json get_scenario(const std::string& base) {
  return {
      {"name", "one get"},
      {"vars", {{"base", base}}},
      {"steps", Json::array({{{"name", "get"}, {"request", {{"url", "{{base}}/delay?ms=1"}}}}})}};
}

// A POSTed test of 2 VUs with `target`; returns its id.
std::string start_test(Daemon& d, const std::string& base, const Json& target,
                       const std::string& duration = "60s") {
  Json body = {{"scenario", get_scenario(base)},
               {"load", {{"vus", 2}, {"duration", duration}, {"grace", "1s"}, {"target", target}}}};
  ApiResponse created = d.api("POST", "/loads", body.dump());
  INFO(created.body);
  REQUIRE(created.status == 201);
  return Json::parse(created.body)["load"];
}

}  // namespace

TEST_CASE("load cli: --target-cmd starts the target, ready first, and stops it after the test") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const int port = unused_port();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  std::ofstream(home.file("s.json")) << get_scenario(base).dump();
  CliResult r =
      run_cli({"load", home.file("s.json"), "--vus", "2", "--duration", "2s", "--target-cmd",
               std::string(CORRAL_TARGET_BINARY) + " --listen 127.0.0.1:" + std::to_string(port),
               "--target-ready", std::to_string(port)},
              home.path(), {}, seconds(60));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex("load (l[0-9a-z-]+)")));
  const std::string id = m[1];
  Json j;
  d.wait_until(
      [&] {
        j = d.api("GET", "/loads/" + id).json;
        return j["target"]["process"]["state"] == "stopped";
      },
      seconds(10), "the target to be stopped after the test");
  // Every request reached the target: it was ready before the first.
  CHECK(j["state"] == "passed");
  CHECK(j["requests"].get<uint64_t>() > 100);
  CHECK(j["errors"]["count"] == 0);
  const Json& p = j["target"]["process"];
  CHECK(p["cmd"][0] == CORRAL_TARGET_BINARY);
  CHECK(p["exit_code"] == 0);  // corral-target ends cleanly on SIGTERM
  CHECK(p["rss_peak"].get<uint64_t>() > 0);
  CHECK_THAT(p["lines"][0]["text"].get<std::string>(), Catch::Contains("listening on"));
  const pid_t pid = j["target"]["pid"];
  CHECK_FALSE(process_alive(pid));
  CHECK(j["target"]["rss_max"].get<double>() > 0);  // watched as watch.pid would be
}

TEST_CASE(
    "load api: a started target that dies aborts the test, with how, why and its last lines") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const std::string id = start_test(
      d, api.base(),
      {{"cmd",
        {"sh", "-c",
         "echo ready; sleep 2; echo '<--- Last few GCs --->' >&2; "
         "echo 'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of "
         "memory' >&2; kill -ABRT $$"}},
       {"ready", {{"log", "^ready$"}}}});
  Json j;
  d.wait_until(
      [&] {
        j = d.api("GET", "/loads/" + id).json;
        return j["state"] != "running";
      },
      seconds(15), "the test to end");
  CHECK(j["state"] == "aborted");
  CHECK_THAT(j["reason"].get<std::string>(),
             Catch::Contains(") was killed by SIGABRT at ") &&
                 Catch::EndsWith(": FATAL ERROR: Reached heap limit Allocation failed - "
                                 "JavaScript heap out of memory"));
  CHECK(j["elapsed_s"].get<double>() < 5);  // ended at the death, not at 60 s
  const Json& p = j["target"]["process"];
  CHECK(p["state"] == "died");
  CHECK(p["signal"] == "SIGABRT");
  CHECK(p["exit_code"].is_null());
  CHECK(p["ended_s"].get<double>() > 1.5);
  CHECK(p["cause"] ==
        "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of "
        "memory");
  REQUIRE(p["lines"].size() == 3);
  CHECK(p["lines"][0] == Json({{"stream", "stdout"}, {"text", "ready"}}));
  CHECK(p["lines"][1] == Json({{"stream", "stderr"}, {"text", "<--- Last few GCs --->"}}));
  CHECK(j["target"]["event"]["event"] == "died");
  CHECK(j["target"]["event"]["how"] == "was killed by SIGABRT");
  CHECK(j["target"]["event"]["load"]["vus"] == 2);
}

TEST_CASE("load api: a target that is not ready refuses the test with its last lines") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  for (const auto& [target, message] : std::vector<std::pair<Json, std::string>>{
           {{{"cmd",
              {"sh", "-c", "echo \"Error: Cannot find module '/srv/server.js'\" >&2; exit 1"}},
             {"ready", {{"log", "listening"}}}},
            "the target exited with code 1 before it was ready; its last lines:\n"
            "  stderr| Error: Cannot find module '/srv/server.js'"},
           {{{"cmd", {"sleep", "30"}},
             {"ready", {{"port", unused_port()}}},
             {"ready_timeout", "1s"}},
            "the target was not ready after 1s; it wrote nothing"},
           {{{"cmd", {"/nonexistent/server"}}, {"ready", {{"log", "listening"}}}},
            "the target exited with code 127 before it was ready; its last lines:\n  stderr| "
            "corral: cannot run the target \"/nonexistent/server\": No such file or directory"}}) {
    Json body = {{"scenario", get_scenario(api.base())},
                 {"load", {{"vus", 2}, {"duration", "10s"}, {"target", target}}}};
    ApiResponse refused = d.api("POST", "/loads", body.dump());
    INFO(refused.body);
    CHECK(refused.status == 503);
    CHECK(Json::parse(refused.body)["error"] == message);
  }
  CHECK(d.api("GET", "/loads").json["loads"].empty());  // nothing ran
  CHECK(api.stats()["requests"] == 0);
}

TEST_CASE("load: a daemon killed with SIGKILL leaves no target behind") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const int port = unused_port();
  const std::string id =
      start_test(d, "http://127.0.0.1:" + std::to_string(port),
                 {{"cmd", {CORRAL_TARGET_BINARY, "--listen", "127.0.0.1:" + std::to_string(port)}},
                  {"ready", {{"url", "http://127.0.0.1:" + std::to_string(port) + "/stats"}}}});
  const pid_t target = d.api("GET", "/loads/" + id).json["target"]["pid"];
  REQUIRE(process_alive(target));
  d.signal(SIGKILL);
  wait_for([&] { return !process_alive(target); }, seconds(10),
           "the target to die with the daemon");
}

TEST_CASE("load cli: --find-max --fresh-target --search bisect narrows the breaking point down") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const int port = unused_port();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  Json scenario = get_scenario(base);
  scenario["load"] = {{"connections", 20}, {"pace", "200ms"}, {"duration", "2s"}, {"grace", "1s"}};
  std::ofstream(home.file("s.json")) << scenario.dump();
  // A target that gives out above 60 open connections; each probe starts a fresh one on the
  // same port, so the one before must be gone first.
  const std::vector<std::string> target = {"--target-cmd",
                                           std::string(CORRAL_TARGET_BINARY) +
                                               " --listen 127.0.0.1:" + std::to_string(port) +
                                               " --die-above-connections 60",
                                           "--target-ready", std::to_string(port)};
  std::vector<std::string> args = {
      "load",   home.file("s.json"),     "--find-max", "--fresh-target",  "--search",
      "bisect", "--precision",           "5%",         "--step-duration", "1s",
      "--out",  home.file("search.json")};
  args.insert(args.end(), target.begin(), target.end());
  CliResult r = run_cli(args, home.path(), {}, seconds(120));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("failed: the target was killed by SIGABRT"));
  Json search = Json::parse(read_file(home.file("search.json")));
  CHECK(search["holds"].get<double>() <= 60);
  CHECK(search["fails"].get<double>() > 60);
  CHECK(search["precision"].get<double>() <= 0.05);
  CHECK(search["probes"].size() <= 8);
  CHECK_THAT(r.out, Catch::Contains("breaking point: "));
  // Every probe had a target of its own, stopped (or dead) before the next one started.
  for (const Json& probe : search["probes"]) {
    Json t = d.api("GET", "/loads/" + probe["test"].get<std::string>()).json;
    CHECK(t["target"]["process"]["state"] != "running");
    CHECK(t["state"] == (probe["failed"] == true ? "aborted" : "passed"));
  }

  CliResult no_target =
      run_cli({"load", home.file("s.json"), "--find-max", "--fresh-target", "--search", "bisect"},
              home.path());
  INFO(no_target.describe());
  CHECK(no_target.exit_code == 2);
  CHECK_THAT(no_target.err, Catch::Contains("--fresh-target: the load section has no \"target\""));
}
