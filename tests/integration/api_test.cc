// The control API as a client sees it: routes, errors, scaling, restarting one slot, the
// socket's permissions and the TCP listener.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

namespace corral::test {
namespace {

bool is_json_error(const ApiResponse& r) {
  return r.json.is_object() && r.json.contains("error") && r.json["error"].is_string() &&
         !r.json["error"].get<std::string>().empty();
}

TEST_CASE("api: an unknown path answers 404 with a JSON error") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(1));
  ApiResponse r = daemon.api("GET", "/nope");
  INFO(r.body);
  CHECK(r.status == 404);
  CHECK(is_json_error(r));
}

TEST_CASE("api: a known path with another method answers 405 naming the methods it takes") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(1));
  ApiResponse r = daemon.api("PATCH", "/workers/reload");
  INFO(r.body);
  CHECK(r.status == 405);
  CHECK(is_json_error(r));
  CHECK_THAT(r.body, Catch::Contains("it takes POST, GET, HEAD"));
  // The Allow header, as RFC 9110 asks of a 405.
  const std::string answer = raw_tcp_exchange(
      "127.0.0.1", tcp_port(daemon),
      "PUT /runs/r1-x HTTP/1.1\r\nHost: corral\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  INFO("answer: " << answer);
  CHECK(answer.rfind("HTTP/1.1 405", 0) == 0);
  CHECK_THAT(answer, Catch::Contains("Allow: GET, HEAD, DELETE\r\n"));
}

TEST_CASE("api: GET /config shows the daemon's effective settings with the token masked") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(1).with_config(
                          {{"api_token", "s3cret-token-123"}, {"keep_runs_for", "3d"}}));
  ApiResponse r = daemon.api("GET", "/config");
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.json["config"]["workers"] == 1);
  CHECK(r.json["config"]["api_token"] == "(set)");
  CHECK(r.json["config"]["keep_runs_for"] == "3d");
  CHECK(r.body.find("s3cret-token-123") == std::string::npos);
  CHECK(r.json["home"] == home.path());
  CHECK(r.json["needs_master_restart"].is_array());
}

TEST_CASE("api: a malformed request answers 400 with a JSON error") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(1));
  const int port = tcp_port(daemon);
  const std::string answer = raw_tcp_exchange("127.0.0.1", port, "GARBAGE\r\n\r\n");
  INFO("answer: " << answer);
  REQUIRE(answer.rfind("HTTP/1.1 400", 0) == 0);
  const size_t body_at = answer.find("\r\n\r\n");
  REQUIRE(body_at != std::string::npos);
  Json body = Json::parse(answer.substr(body_at + 4), nullptr, false);
  CHECK(body.is_object());
  CHECK(body.contains("error"));
  // The daemon is fine afterwards.
  CHECK(daemon.api("GET", "/health").status == 200);
}

TEST_CASE("api: scale up to 3 and down to 1 leaves exactly the wanted workers running") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(2).with_config(Json{{"stop_grace", "2s"}}));
  daemon.wait_ready(2);

  ApiResponse up = daemon.api("POST", "/workers/scale", R"({"workers":3})");
  INFO(up.body);
  REQUIRE(up.status == 200);
  CHECK(up.json.at("workers") == 3);
  Json three = daemon.wait_ready(3);
  std::vector<pid_t> removed = {three[1].at("pid"), three[2].at("pid")};
  const pid_t kept = three[0].at("pid");

  ApiResponse down = daemon.api("POST", "/workers/scale", R"({"workers":1})");
  REQUIRE(down.status == 200);
  Json one = daemon.wait_ready(1);
  CHECK(one[0].at("slot") == 0);
  CHECK(one[0].at("pid") == kept);
  for (pid_t p : removed) {
    daemon.wait_until([&] { return !process_alive(p); }, seconds(5),
                      "removed worker pid " + std::to_string(p) + " to be gone");
  }
  CHECK(daemon.health().at("workers_wanted") == 1);
}

TEST_CASE("api: a bad scale body answers 400 naming the field") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(1));
  for (const char* body :
       {R"({"workers":"three"})", R"({"workers":-1})", R"({})", R"({"workers":2.5})"}) {
    ApiResponse r = daemon.api("POST", "/workers/scale", body);
    INFO("body " << body << " -> " << r.status << " " << r.body);
    CHECK(r.status == 400);
    REQUIRE(is_json_error(r));
    CHECK_THAT(r.json["error"].get<std::string>(), Catch::Contains("workers"));
  }
  ApiResponse not_json = daemon.api("POST", "/workers/scale", "three please");
  INFO(not_json.body);
  CHECK(not_json.status == 400);
  CHECK(is_json_error(not_json));
  CHECK(daemon.health().at("workers_wanted") == 1);  // nothing changed
}

TEST_CASE("api: an unknown or repeated field in a body answers 400 naming it, and runs nothing") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(1));
  const std::string scenario = R"({"name": "t", "steps": [{"sleep": "10ms"}]})";
  struct Case {
    const char* method;
    const char* path;
    std::string body;
    const char* error;
  };
  const Case cases[] = {
      {"POST", "/runs", R"({"scenario": )" + scenario + R"(, "instance": 3})",
       R"(unknown field "instance" (did you mean "instances"?))"},
      {"POST", "/runs", R"({"scenario": )" + scenario + R"(, "instances": 2, "instances": 3})",
       R"(request body: the key "instances" appears twice)"},
      {"POST", "/runs", R"({"scenario": {"name": "t", "steps": [{"sleep": "1s", "sleep": "2s"}]}})",
       R"(request body: scenario.steps[0]: the key "sleep" appears twice)"},
      {"POST", "/loads", R"({"scenario": )" + scenario + R"(, "laod": {"vus": 1}})",
       R"(unknown field "laod" (did you mean "load"?))"},
      {"POST", "/schedules",
       R"({"name": "n", "cron": "0 3 * * *", "catchup": true, "scenario": )" + scenario + "}",
       R"(unknown field "catchup" (did you mean "catch_up"?))"},
      {"POST", "/workers/scale", R"({"worker": 2})", R"(unknown field "worker")"},
      {"POST", "/workers/restart", R"({"slots": 0})", R"(unknown field "slots")"},
  };
  for (const Case& c : cases) {
    ApiResponse r = daemon.api(c.method, c.path, c.body);
    INFO(c.path << " " << c.body << " -> " << r.status << " " << r.body);
    CHECK(r.status == 400);
    REQUIRE(is_json_error(r));
    CHECK_THAT(r.json["error"].get<std::string>(), Catch::Contains(c.error));
  }
  CHECK(daemon.api("GET", "/runs").json["runs"].empty());
  CHECK(daemon.api("GET", "/loads").json["loads"].empty());
  CHECK(daemon.health().at("workers_wanted") == 1);
}

TEST_CASE("api: restarting slot 0 replaces only that worker, with reason stopped") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(2).with_config(Json{{"stop_grace", "2s"}}));
  Json before = daemon.wait_ready(2);
  const pid_t old0 = before[0].at("pid");
  const pid_t old1 = before[1].at("pid");

  ApiResponse r = daemon.api("POST", "/workers/restart", R"({"slot":0})");
  INFO(r.body);
  REQUIRE(r.status == 200);
  Json w;
  daemon.wait_until(
      [&] {
        w = daemon.worker(0);
        return w.at("state") == "ready" && w.at("pid") != old0 && w.at("pid") != 0;
      },
      seconds(5), "slot 0 ready with a new pid");
  INFO("slot 0: " << w.dump());
  REQUIRE(w.at("last_exit").is_object());
  CHECK(w["last_exit"].at("reason") == "stopped");
  CHECK_FALSE(process_alive(old0));
  Json one = daemon.worker(1);
  CHECK(one.at("pid") == old1);
  CHECK(one.at("state") == "ready");
  CHECK(one.at("restarts") == 0);
  CHECK(one.at("last_exit").is_null());
}

TEST_CASE("api: GET /workers gives each worker's CPU use, measured by the master every second") {
  TempHome home;
  JobApi api;
  Daemon daemon(home, DaemonOptions().with_workers(1));
  daemon.wait_ready(1);
  Json w;
  daemon.wait_until(
      [&] {
        w = daemon.worker(0);
        return w.at("cpu_percent").is_number();
      },
      seconds(5), "slot 0's CPU use");
  CHECK(w["cpu_percent"].get<double>() >= 0);
  // Busy with 1,000 instances polling every 100 ms, the worker uses CPU, and it shows.
  submit_run(daemon, job_poll_scenario("cpu-polls", 60000, "100ms"), 1000, api);
  daemon.wait_until(
      [&] {
        w = daemon.worker(0);
        return w.at("cpu_percent").is_number() && w["cpu_percent"].get<double>() > 1.0;
      },
      seconds(20), "slot 0's CPU use to rise above 1%");
  CHECK(w["cpu_percent"].get<double>() <= 100.0 * expected_usable_cpus());
}

TEST_CASE("api: restarting a slot that does not exist answers 404") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(2));
  ApiResponse r = daemon.api("POST", "/workers/restart", R"({"slot":9})");
  INFO(r.body);
  CHECK(r.status == 404);
  CHECK(is_json_error(r));
}

TEST_CASE("api: the control socket is private to its owner (mode 0600)") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(1));
  struct stat st {};
  REQUIRE(::stat(home.socket_path().c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 07777) == 0600);
}

TEST_CASE("api: /latency answers 200 on the TCP port that /health reports") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(1));
  const int port = tcp_port(daemon);
  auto r = try_tcp_request("127.0.0.1", port, "GET", "/latency");
  REQUIRE(r.has_value());
  CHECK(r->status == 200);
  CHECK_FALSE(r->body.empty());
  auto h = try_tcp_request("127.0.0.1", port, "GET", "/health");
  REQUIRE(h.has_value());
  CHECK(h->json.at("pid") == daemon.pid());
}

}  // namespace
}  // namespace corral::test
