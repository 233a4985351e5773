// Moving instances between workers: take_waiting() takes only instances with nothing in flight,
// and a moved poll waits out the rest of its interval on the new worker instead of polling at
// once.
#include <catch2/catch.hpp>

#include "tests/unit/worker/engine_fixture.h"

using namespace corral::test::engine;

namespace {

// Polls a job that never finishes, every `every`.
json slow_poll(const std::string& every) {
  json s = job_scenario(1000000, false, "10m");
  s["steps"][1]["poll"]["every"] = every;
  return s;
}

uint64_t polls(Fixture& f) { return f.target->polls(); }

}  // namespace

TEST_CASE("engine: take_waiting takes instances between polls, never one with a request in "
          "flight, and their checkpoints say when the next poll is due") {
  Fixture f;
  f.start(slow_poll("5s"), 3);
  REQUIRE(f.engine->define_run("r2", json::parse(R"({"name": "hangs",
      "steps": [{"request": {"url": "{{base}}/hang", "timeout": "30s"}}]})"),
                               {{"base", f.base}})
              .is_ok());
  REQUIRE(f.engine->start("r2", 0, Checkpoint{}).is_ok());
  // Each of the three has created its job and polled once: all now wait 5 s for the next.
  REQUIRE(f.run_until([&] { return polls(f) >= 3 && f.target->hanging() == 1; }));
  const int64_t now = corral::unix_ms_now();

  size_t taken = 0;
  json one = f.engine->take_waiting(1, taken);
  CHECK(taken == 1);
  CHECK(one["r1"].size() == 1);
  json rest = f.engine->take_waiting(100, taken);
  CHECK(taken == 2);
  REQUIRE(rest["r1"].size() == 2);
  CHECK_FALSE(rest.contains("r2"));  // its request is in flight: it stays
  CHECK(f.engine->active() == 1);
  CHECK(f.engine->active("r1") == 0);
  for (const auto& [index, cp] : rest["r1"].items()) {
    INFO(cp.dump());
    CHECK(cp["step"] == 1);
    CHECK(cp["attempts"] == 1);
    CHECK(cp["wake_ms"].get<int64_t>() > now);
    CHECK(cp["wake_ms"].get<int64_t>() <= now + 5000);
  }
}

TEST_CASE("engine: a moved poll waits for its next attempt until the time its checkpoint "
          "says, and one due already polls at once") {
  Fixture f;
  f.start(slow_poll("5s"), 1);
  REQUIRE(f.run_until([&] { return polls(f) >= 1; }));
  size_t taken = 0;
  json cp_json = f.engine->take_waiting(1, taken)["r1"]["0"];
  REQUIRE(taken == 1);
  auto cp = corral::ipc::checkpoint_from_json(cp_json);
  REQUIRE(cp.is_ok());

  const uint64_t before = polls(f);
  REQUIRE(f.engine->start("r1", 0, *cp).is_ok());
  f.run_until([] { return false; }, 300);  // the next poll is about 4.7 s away
  CHECK(polls(f) == before);
  CHECK(f.engine->active() == 1);

  size_t again = 0;
  json moved = f.engine->take_waiting(1, again)["r1"]["0"];
  REQUIRE(again == 1);
  CHECK(moved["wake_ms"] == cp->wake_ms);  // still due when it was due
  moved["wake_ms"] = corral::unix_ms_now() - 1;
  REQUIRE(f.engine->start("r1", 0, *corral::ipc::checkpoint_from_json(moved)).is_ok());
  CHECK(f.run_until([&] { return polls(f) > before; }, 2000));
  CHECK(f.of("step").size() == 1);  // only step 0 ended: the poll goes on
}

TEST_CASE("engine: a fresh instance waiting for its start-spread place can move, and waits for "
          "the same place on its new worker") {
  Fixture f;
  json s = {{"name", "spread"}, {"start_spread", "1h"}, {"steps", {{{"sleep", "0s"}}}}};
  const int64_t created = corral::unix_ms_now();
  REQUIRE(f.engine->define_run("r1", s, {}, {.size = 2, .created_ms = created}).is_ok());
  REQUIRE(f.engine->start("r1", 1, Checkpoint{}).is_ok());  // its place is half an hour away
  size_t taken = 0;
  json moved = f.engine->take_waiting(10, taken);
  REQUIRE(taken == 1);
  CHECK(f.engine->active("r1") == 0);
  auto cp = corral::ipc::checkpoint_from_json(moved["r1"]["1"]);
  REQUIRE(cp.is_ok());
  CHECK(cp->step_started_ms == 0);  // it has not started: its place is still ahead of it
  REQUIRE(f.engine->start("r1", 1, *cp).is_ok());
  CHECK_FALSE(f.run_until([&] { return f.done_count() == 1; }, 300));
  CHECK(f.engine->active("r1") == 1);
  CHECK(f.events.empty());
}

TEST_CASE(
    "engine: a poll resumed without the time of its next attempt (its worker died) makes "
    "it at a point spread over its interval, not at once") {
  Fixture f;
  f.start(slow_poll("2s"), 40);
  REQUIRE(f.run_until([&] { return polls(f) >= 40; }));
  size_t taken = 0;
  json waiting = f.engine->take_waiting(100, taken)["r1"];
  REQUIRE(taken == 40);
  // Their checkpoints as the journal has them: the step had begun, its next attempt's time
  // is not known.
  const uint64_t before = polls(f);
  const int64_t now = corral::unix_ms_now();
  for (auto& [index, cp_json] : waiting.items()) {
    cp_json.erase("wake_ms");
    auto cp = corral::ipc::checkpoint_from_json(cp_json);
    REQUIRE(cp.is_ok());
    REQUIRE(cp->step_started_ms != 0);
    REQUIRE(f.engine->start("r1", static_cast<uint32_t>(std::stoul(index)), *cp).is_ok());
  }
  // None polled on its start: each waits for its place, and the places cover the interval.
  json again = f.engine->take_waiting(100, taken)["r1"];
  REQUIRE(taken == 40);
  CHECK(polls(f) == before);
  int64_t first = INT64_MAX, last = 0;
  for (const auto& [index, cp] : again.items()) {
    int64_t wake = cp["wake_ms"].get<int64_t>();
    CHECK(wake >= now);
    CHECK(wake <= corral::unix_ms_now() + 2000);
    first = std::min(first, wake);
    last = std::max(last, wake);
  }
  CHECK(first - now < 500);
  CHECK(last - now > 1500);
  // Started again with those places, every one polls within the interval.
  for (const auto& [index, cp_json] : again.items()) {
    auto cp = corral::ipc::checkpoint_from_json(cp_json);
    REQUIRE(f.engine->start("r1", static_cast<uint32_t>(std::stoul(index)), *cp).is_ok());
  }
  CHECK(f.run_until([&] { return polls(f) >= before + 40; }, 10000));
}

TEST_CASE(
    "engine: an instance handed back in the middle of its request is due at once on its "
    "next worker") {
  Fixture f;
  REQUIRE(f.engine
              ->define_run("r2", json::parse(R"({"name": "hangs",
      "steps": [{"request": {"url": "{{base}}/hang", "timeout": "30s"}}]})"),
                           {{"base", f.base}})
              .is_ok());
  REQUIRE(f.engine->start("r2", 0, Checkpoint{}).is_ok());
  REQUIRE(f.run_until([&] { return f.target->hanging() == 1; }));
  const int64_t before = corral::unix_ms_now();
  json all = f.engine->take_all();
  REQUIRE(all["r2"].contains("0"));
  INFO(all.dump());
  CHECK(all["r2"]["0"]["wake_ms"].get<int64_t>() >= before);
  CHECK(all["r2"]["0"]["wake_ms"].get<int64_t>() <= corral::unix_ms_now());
}
