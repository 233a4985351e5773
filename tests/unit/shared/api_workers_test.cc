// The answer models of GET /workers and GET /health (shared/api/workers.h): what the master
// writes, the CLI reads back the same; a field of the wrong type is an error that names it;
// an absent field keeps its default and an unknown one is ignored (a daemon one version apart).
#include <catch2/catch.hpp>

#include "shared/api/workers.h"

namespace corral::api {
namespace {

using nlohmann::json;

WorkerEntry full_worker() {
  WorkerEntry w;
  w.slot = 1;
  w.pid = 4242;
  w.state = "ready";
  w.restarts = 2;
  w.starts = 3;
  w.uptime_s = 12.5;
  w.rss_bytes = 1 << 20;
  w.cpu_percent = 37.5;
  w.heartbeat_lag_ms = 120;
  w.loop_lag_ms = 0.25;
  w.active = 9;
  w.instances = 10;
  w.capacity = 1000;
  w.reason = "";
  w.last_exit = LastExit{"signal", 0, 9, "SIGKILL", "2026-12-05T12:00:00Z", "by hand"};
  w.next_start_in_ms = 0;
  w.successor = SuccessorEntry{4343, "probation", 1.5};
  return w;
}

TEST_CASE("api workers: an answer reads back as the master wrote it") {
  WorkersAnswer a;
  WorkerEntry waiting;
  waiting.slot = 0;
  waiting.state = "backoff";
  waiting.next_start_in_ms = 900;
  a.workers = {full_worker(), waiting};
  a.memory = {512u << 20, 2048, true};
  auto back = workers_from_json(json::parse(to_json(a).dump()));
  REQUIRE(back.is_ok());
  REQUIRE(back->workers.size() == 2);
  CHECK(back->workers[0].slot == 0);  // in slot order
  CHECK(back->workers[0].state == "backoff");
  CHECK_FALSE(back->workers[0].cpu_percent);  // null: not measured
  CHECK_FALSE(back->workers[0].capacity);
  CHECK_FALSE(back->workers[0].last_exit);
  CHECK(back->workers[1] == full_worker());
  CHECK(back->memory == a.memory);

  Health h{"ok", "0.1.0", 7, 3.5, "/home", "127.0.0.1:7070", 2, 2, 0, "none", {{"ok", true}}, {}};
  auto health = health_from_json(json::parse(to_json(h).dump()));
  REQUIRE(health.is_ok());
  CHECK(*health == h);
  CHECK_FALSE(to_json(h).contains("cluster"));  // in no cluster
  h.status = "degraded";
  h.cluster = {{"ok", false}, {"epoch", 0}, {"fenced", "no heartbeat written for 4500 ms"}};
  health = health_from_json(json::parse(to_json(h).dump()));
  REQUIRE(health.is_ok());
  CHECK(*health == h);
}

TEST_CASE("api workers: a field of the wrong type is an error that names it") {
  json j = to_json(WorkersAnswer{{full_worker(), full_worker()}, {}});
  j["workers"][1]["pid"] = "4242";
  auto read = workers_from_json(j);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::StartsWith("workers[1].pid: expected"));
  j = to_json(WorkersAnswer{{full_worker()}, {}});
  j["workers"][0]["last_exit"]["signal"] = "KILL";
  read = workers_from_json(j);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::StartsWith("workers[0].last_exit.signal: expected"));
  CHECK_FALSE(workers_from_json(json::array()).is_ok());
  CHECK_FALSE(health_from_json(json{{"pid", -1.5}}).is_ok());
}

TEST_CASE("api workers: absent fields keep their defaults, unknown ones are ignored") {
  auto read = workers_from_json(json::parse(
      R"({"workers": [{"slot": 0, "pid": 1, "state": "ready", "phase": "new in a later daemon"}]})"));
  REQUIRE(read.is_ok());
  REQUIRE(read->workers.size() == 1);
  CHECK(read->workers[0].pid == 1);
  CHECK(read->workers[0].restarts == 0);
  CHECK(read->memory == WorkerMemory{});
}

}  // namespace
}  // namespace corral::api
