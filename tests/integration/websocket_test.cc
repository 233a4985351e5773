// WebSocket steps through the daemon, against corral-target's WebSocket echo: a run whose
// instances hold sockets across steps, a worker killed while they do, and wss:// through
// nginx's TLS.
#include <catch2/catch.hpp>

#include <signal.h>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_nginx.h"
#include "tests/support/harness_runs.h"
#include "tests/support/test_pki.h"

using namespace corral::test;

namespace {

// Opens a socket, has its first message echoed, waits `hold`, then does it again and closes.
Json echo_scenario(const JobApi& api, const std::string& hold, std::string base = "") {
  if (base.empty()) base = "ws://127.0.0.1:" + std::to_string(api.port());
  Json s = {{"name", "ws echo"},
            {"vars", {{"ws_base", base}}},
            {"steps",
             {{{"ws", {{"url", "{{ws_base}}/ws"}, {"socket", "echo"}}}},
              {{"ws_send", {{"socket", "echo"}, {"json", {{"i", "{{instance}}"}}}}}},
              {{"ws_receive", {{"socket", "echo"}, {"until", {{"json", "/i"}, {"exists", true}}}}},
               {"capture", {{"i", {{"json", "/i"}}}}}},
              {{"sleep", hold}},
              {{"ws_send", {{"socket", "echo"}, {"text", "again {{i}}"}}}},
              {{"ws_receive", {{"socket", "echo"}, {"until", {{"body_contains", "again"}}}}}},
              {{"ws_close", {{"socket", "echo"}}}}}}};
  return s;
}

int passed_in(const Json& run) { return count_in(run, "passed"); }

}  // namespace

TEST_CASE("websocket: a run's instances talk over sockets that live across their steps") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  std::string id = submit_run(d, echo_scenario(api, "0s"), 50, api);
  wait_run_finished(d, id, seconds(30));
  Json run = run_of(d, id);
  CHECK(passed_in(run) == 50);
  Json stats = api.stats();
  CHECK(stats["ws_messages"] == 100);
  d.wait_until([&] { return api.stats()["websockets"] == 0; }, seconds(10),
               "corral-target to see every socket closed");
}

TEST_CASE("websocket: instances of a killed worker resume at the ws step and open new sockets") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  Json workers = d.wait_ready(1);
  std::string id = submit_run(d, echo_scenario(api, "2s"), 20, api);
  // Every instance holds its socket, waiting in the sleep, and the master has its step 2.
  d.wait_until(
      [&] {
        int at_sleep = 0;
        for (const Json& in : instances_of(d, id, 20)) {
          for (const Json& s : in["steps"]) at_sleep += s["step"] == 2 ? 1 : 0;
        }
        return at_sleep == 20;
      },
      seconds(10), "every instance's first echo to be recorded");
  REQUIRE(api.stats()["ws_messages"] == 20);
  REQUIRE(::kill(workers[0].at("pid").get<pid_t>(), SIGKILL) == 0);
  wait_run_finished(d, id, seconds(30));
  Json run = run_of(d, id);
  INFO(run.dump());
  CHECK(passed_in(run) == 20);
  // Each went back to its ws step: the first message was sent again on a new socket.
  CHECK(api.stats()["ws_messages"] == 60);
  Json instances = instances_of(d, id, 20);
  for (const Json& in : instances) {
    int opened = 0;
    for (const Json& s : in["steps"]) opened += s["step"] == 0 ? 1 : 0;
    CHECK(opened == 2);
  }
  d.wait_until([&] { return api.stats()["websockets"] == 0; }, seconds(10),
               "corral-target to see every socket closed");
}

TEST_CASE("websocket: wss:// through nginx's TLS, trusted by the scenario's CA, refused without") {
  TempHome home;
  JobApi api;
  Nginx::Options o;
  o.server_extra = "    location /ws { proxy_pass http://127.0.0.1:" + std::to_string(api.port()) +
                   "; proxy_http_version 1.1; proxy_set_header Upgrade $http_upgrade; "
                   "proxy_set_header Connection \"upgrade\"; }\n";
  Nginx nginx(o);
  const std::string wss = "wss" + nginx.https_base().substr(5);  // https:// -> wss://
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json trusted = echo_scenario(api, "0s", wss);
  trusted["tls"] = {{"ca_file", test_pki().ca}};
  std::string id = submit_run(d, trusted, 5, api);
  wait_run_finished(d, id, seconds(30));
  Json run = run_of(d, id);
  INFO(run.dump());
  CHECK(passed_in(run) == 5);
  CHECK(api.stats()["ws_messages"] == 10);  // through nginx, over TLS
  // The system's store does not know the test CA: the opening fails, and says why.
  std::string refused = submit_run(d, echo_scenario(api, "0s", wss), 1, api);
  wait_run_finished(d, refused, seconds(30));
  Json failed = run_of(d, refused);
  INFO(failed.dump());
  CHECK(count_in(failed, "failed") == 1);
  Json in = instances_of(d, refused, 1);
  CHECK_THAT(in.dump(), Catch::Contains("certificate"));
  CHECK(api.stats()["ws_messages"] == 10);
}
