// `corral load` over WebSocket, against corral-target's echo: the held model keeps one socket
// per VU for the whole test, and the closed model opens one per iteration; sockets, messages,
// the server's close codes and the ws_ thresholds are in the answer and the summary. Each test
// is bounded: a few seconds, a few hundred messages.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include "shared/proc.h"
#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"

using namespace corral::test;

namespace {

std::string write_file(const TempHome& home, const std::string& name, const Json& doc) {
  std::ofstream(home.file(name)) << doc.dump();
  return home.file(name);
}

// Opens a socket to `path`, sends a JSON message and waits for its echo; then `more` steps.
Json echo_scenario(const JobApi& api, const std::string& path, Json more = Json::array()) {
  Json steps = {
      {{"name", "open"}, {"ws", {{"url", "{{ws_base}}" + path}}}},
      {{"name", "send"}, {"ws_send", {{"json", {{"vu", "{{instance}}"}}}}}},
      {{"name", "echo"}, {"ws_receive", {{"until", {{"json", "/vu"}, {"exists", true}}}}}}};
  for (const Json& step : more) steps.push_back(step);
  return {{"name", "ws load"},
          {"vars", {{"ws_base", "ws://127.0.0.1:" + std::to_string(api.port())}}},
          {"steps", steps}};
}

}  // namespace

TEST_CASE("websocket load: the held model keeps one socket per VU, and counts its messages") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  Json scenario = echo_scenario(api, "/ws");
  scenario["load"] = {{"model", "held"},
                      {"connections", 20},
                      {"pace", "200ms"},
                      {"duration", "3s"},
                      {"thresholds", {{"ws_latency", {"p99 < 5s"}}, {"ws_errors", {"rate < 1%"}}}}};
  const std::string file = write_file(home, "held-ws.json", scenario);
  const std::string out = home.file("out.json");
  CliResult r = run_cli({"load", file, "--out", out}, home.path(), {}, seconds(60));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("connections: up to 20 open; 20 opened, 0 failed"));
  CHECK_THAT(r.out, Catch::Contains("messages   : 300 sent"));
  CHECK(std::regex_search(r.out, std::regex("ok      ws_latency: p99 < 5s  \\([0-9.]+ms\\)")));
  CHECK_THAT(r.out, Catch::Contains("ok      ws_errors: rate < 1%"));
  Json j = Json::parse(std::ifstream(out), nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["state"] == "passed");
  // One socket per VU for the whole test: 20 opened, never one per iteration.
  CHECK(j["connections"]["max"] == 20);
  CHECK(j["connections"]["opened"] == 20);
  CHECK(j["connections"]["failed"] == 0);
  CHECK(j["connections"]["closed"] == 0);
  // Every 200 ms for 3 s: 15 iterations a VU, each a message out and its echo back.
  CHECK(j["iterations"]["passed"] == 20 * 15);
  CHECK(j["messages"]["sent"] == 300);
  CHECK(j["messages"]["received"] == 300);
  CHECK(api.stats()["ws_messages"] == 300);
  // The echo step measured each message, from its send.
  Json echo = j["steps"][2];
  CHECK(echo["name"] == "echo");
  CHECK(echo["requests"] == 300);
  CHECK(echo["latency"]["count"] == 300);
  CHECK(echo["latency"]["max"].get<double>() < 5000);
  // The sockets are closed at the end, with a close handshake.
  d.wait_until([&] { return api.stats()["websockets"] == 0; }, seconds(10),
               "corral-target to see every socket closed");
}

TEST_CASE("websocket load: --find-max ramps held sockets until the server refuses them") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  // The server takes 30 sockets and answers 503 to more: steps of 10, 20 and 40 connections.
  // Sockets of one step may still be closing when the next begins: 10 + 20 stays within 30.
  Json scenario = echo_scenario(api, "/ws?max_open=30");
  scenario["load"] = {{"model", "held"}, {"connections", 10}, {"pace", "200ms"}};
  const std::string file = write_file(home, "knee-ws.json", scenario);
  const std::string out = home.file("knee-ws.out.json");
  CliResult r = run_cli(
      {"load", file, "--find-max", "--step-duration", "2s", "--step-factor", "2", "--out", out},
      home.path(), {}, seconds(90));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("highest sustainable load: 20 connections"));
  Json j = Json::parse(std::ifstream(out), nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["unit"] == "connections");
  REQUIRE(j["steps"].size() == 3);  // 10, 20, 40
  CHECK(j["broke"] == 2);
  CHECK(j["highest"]["target"] == 20);
  CHECK(j["highest"]["error_rate"] == 0.0);
  // A quarter of the sockets were refused: well past the 1 % bound.
  CHECK(j["steps"][2]["error_rate"].get<double>() > 0.1);
  CHECK_THAT(j["why"].get<std::string>(), Catch::Contains("errors"));
}

TEST_CASE("websocket load: corral-target --processes 2 serves the held sockets from both") {
  TempHome home;
  JobApi api(2);
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json scenario = echo_scenario(api, "/ws");
  scenario["load"] = {
      {"model", "held"}, {"connections", 40}, {"pace", "500ms"}, {"duration", "2s"}};
  const std::string file = write_file(home, "held-ws.json", scenario);
  CliResult r = run_cli({"load", file}, home.path(), {}, seconds(60));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK(
      std::regex_search(r.out, std::regex("messages   : 160 sent \\([0-9.]+/s\\), 160 received")));
  // The kernel spread the 40 sockets over both processes (SO_REUSEPORT): each echoed some, and
  // together all, then saw its sockets closed.
  uint64_t echoed = 0;
  for (const auto& [pid, stats] : api.stats_of_each(2)) {
    INFO("corral-target process " << pid << ": " << stats.dump());
    CHECK(stats["ws_messages"].get<uint64_t>() > 0);
    echoed += stats["ws_messages"].get<uint64_t>();
  }
  CHECK(echoed == 160);
  d.wait_until(
      [&] {
        for (const auto& [pid, stats] : api.stats_of_each(2)) {
          if (stats["websockets"] != 0) return false;
        }
        return true;
      },
      seconds(10), "both corral-target processes to see every socket closed");
  // Its supervisor killed outright (SIGKILL, as the fixture ends it), the serving processes go
  // too (PR_SET_PDEATHSIG): no server is left holding the port.
  std::vector<int> children;
  for (const auto& [pid, stats] : api.stats_of_each(2)) children.push_back(pid);
  api.kill_now();
  d.wait_until(
      [&] {
        for (int pid : children) {
          if (corral::proc_stat(pid)) return false;  // nullopt once gone or a zombie
        }
        return true;
      },
      seconds(10), "corral-target's serving processes to end with their supervisor");
}

TEST_CASE(
    "websocket load: the closed model opens a socket per iteration, and counts server closes") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  // The server closes with 4001 after the echo; the second wait sees the close and fails.
  Json wait = {{"name", "wait"},
               {"ws_receive", {{"until", {{"body_contains", "never"}}}}},
               {"timeout", "5s"}};
  Json scenario = echo_scenario(api, "/ws?close_after=1&close_code=4001", Json::array({wait}));
  scenario["load"] = {{"vus", 2},
                      {"duration", "2s"},
                      {"pace", "250ms"},
                      {"thresholds", {{"ws_errors", {"rate < 1%"}}}}};
  const std::string file = write_file(home, "closed-ws.json", scenario);
  const std::string out = home.file("out.json");
  CliResult r = run_cli({"load", file, "--out", out}, home.path(), {}, seconds(60));
  INFO(r.describe());
  CHECK(r.exit_code == 1);  // ws_errors crossed
  CHECK_THAT(r.out, Catch::Contains("CROSSED ws_errors: rate < 1%"));
  CHECK_THAT(r.out, Catch::Contains("lost after connecting (4001 x"));
  Json j = Json::parse(std::ifstream(out), nullptr, false);
  REQUIRE(j.is_object());
  const uint64_t opened = j["connections"]["opened"].get<uint64_t>();
  CHECK(opened == 2 * 8);  // an iteration every 250 ms for 2 s, a socket each
  CHECK(j["connections"]["closed"] == opened);
  CHECK(j["connections"]["close_codes"]["4001"] == opened);
  CHECK(j["iterations"]["failed"] == opened);
  CHECK(j["messages"]["received"] == opened);
  // The wait step failed each time: a transport error (the socket closed under it).
  Json waited = j["steps"][3];
  CHECK(waited["requests"] == opened);
  CHECK(waited["errors"]["transport"] == opened);
  CHECK(j["reasons"].dump().find("closed by the server with 4001") != std::string::npos);
  d.wait_until([&] { return api.stats()["websockets"] == 0; }, seconds(10),
               "corral-target to see every socket closed");
}
