// The engine against a real HTTP server (corral-target's job API) on the same loop.
#include <catch2/catch.hpp>

#include <set>

#include "tests/support/raw_http_server.h"
#include "tests/unit/worker/engine_fixture.h"

using namespace corral::test::engine;

TEST_CASE("engine: a start-poll-sleep scenario passes and reports one event per step") {
  Fixture f;
  f.start(job_scenario(3, false), 20);
  REQUIRE(f.run_until([&] { return f.done_count() == 20; }));
  CHECK(f.engine->active() == 0);
  auto steps = f.of("step", 7);
  REQUIRE(steps.size() == 3);
  CHECK(steps[0]["state"] == "passed");
  CHECK(steps[0]["status"] == 201);
  CHECK(steps[0]["vars"]["job"].is_string());
  CHECK(steps[1]["attempts"] == 3);  // one event for three polls
  CHECK(steps[1]["until_ms"].get<int64_t>() >= 40);
  CHECK(steps[2]["ended_ms"].get<int64_t>() - steps[2]["started_ms"].get<int64_t>() >= 30);
  auto done = f.of("done", 7);
  REQUIRE(done.size() == 1);
  CHECK(done[0]["state"] == "passed");
}

TEST_CASE("engine: fail_if ends the instance failed with what was seen") {
  Fixture f;
  f.start(job_scenario(2, true));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done");
  CHECK(done[0]["state"] == "failed");
  CHECK_THAT(done[0]["reason"].get<std::string>(),
             Catch::Contains("fail_if held: /status was \"failed\""));
  CHECK(f.of("step").back()["step"] == 1);
}

TEST_CASE("engine: a poll that never holds fails when its timeout passes") {
  Fixture f;
  f.start(job_scenario(1000000, false, "150ms"));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto step = f.of("step").back();
  CHECK(step["state"] == "failed");
  CHECK_THAT(step["reason"].get<std::string>(), Catch::StartsWith("poll timed out after 150ms"));
  int64_t took = step["ended_ms"].get<int64_t>() - step["started_ms"].get<int64_t>();
  CHECK(took >= 150);
  CHECK(took < 2000);
}

TEST_CASE("engine: a poll with max_attempts fails after that many attempts") {
  Fixture f;
  auto s = job_scenario(1000000, false);
  s["steps"][1]["poll"]["max_attempts"] = 4;
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto step = f.of("step").back();
  CHECK(step["attempts"] == 4);
  CHECK_THAT(step["reason"].get<std::string>(),
             Catch::StartsWith("until not met after 4 attempts"));
}

TEST_CASE("engine: retry repeats a request on 5xx, and counts the first try") {
  Fixture f;
  json s = {{"name", "flaky"},
            {"steps",
             {{{"request", {{"url", "{{base}}/flaky/a?fail=2"}}},
               {"expect", {{{"status", 200}}}},
               {"retry", {{"attempts", 3}, {"initial_interval", "10ms"}}}},
              {{"request", {{"url", "{{base}}/flaky/b?fail=5"}}},
               {"expect", {{{"status", 200}}}},
               {"retry", {{"attempts", 2}, {"initial_interval", "10ms"}}}}}}};
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto steps = f.of("step");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0]["state"] == "passed");
  CHECK(steps[0]["attempts"] == 3);
  CHECK(steps[1]["state"] == "failed");
  CHECK(steps[1]["attempts"] == 2);
  CHECK_THAT(steps[1]["reason"].get<std::string>(), Catch::Contains("status was 503"));
}

TEST_CASE("engine: a transport error after the retries ends the instance errored") {
  Fixture f;
  json s = {{"name", "refused"},
            {"steps",
             {{{"request", {{"url", "http://127.0.0.1:1/"}, {"timeout", "2s"}}},
               {"retry", {{"attempts", 2}, {"initial_interval", "10ms"}}}}}}};
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done");
  CHECK(done[0]["state"] == "errored");
  CHECK_THAT(done[0]["reason"].get<std::string>(), Catch::Contains("transport error"));
  CHECK_THAT(done[0]["reason"].get<std::string>(), Catch::Contains("2 tries"));
}

TEST_CASE("engine: a capture that finds nothing fails the step naming the pointer") {
  Fixture f;
  json s = {
      {"name", "capture"},
      {"steps",
       {{{"request", {{"url", "{{base}}/status/1"}}}, {"capture", {{"x", {{"json", "/nope"}}}}}}}}};
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done");
  CHECK(done[0]["state"] == "failed");
  CHECK_THAT(done[0]["reason"].get<std::string>(), Catch::Contains("/nope not found"));
}

TEST_CASE("engine: an instance resumes from its checkpoint's step with its variables") {
  Fixture f;
  // A job the target knows, created directly, so the resumed poll has something to poll.
  f.start(job_scenario(2, false));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  std::string job = f.of("step")[0]["vars"]["job"];
  f.events.clear();

  Checkpoint cp;
  cp.step = 1;
  cp.vars = {{"job", job}};
  REQUIRE(f.engine->start("r1", 5, cp).is_ok());
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto steps = f.of("step", 5);
  REQUIRE(steps.size() == 2);  // step 0 did not run again
  CHECK(steps[0]["step"] == 1);
  CHECK(steps[0]["state"] == "passed");
  CHECK(f.of("done", 5)[0]["state"] == "passed");
}

TEST_CASE("engine: a poll that waits out its deadline after an answer keeps that answer") {
  Fixture f;
  json s = job_scenario(1000000, false, "150ms");
  s["steps"][1]["poll"]["every"] = "1s";  // the next attempt would come after the deadline
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto step = f.of("step").back();
  CHECK(step["state"] == "failed");
  CHECK(step["attempts"] == 1);
  CHECK_THAT(step["reason"].get<std::string>(), Catch::StartsWith("poll timed out after 150ms"));
  CHECK(step["status"] == 200);
  CHECK_THAT(step.value("body", ""), Catch::Contains("\"status\":\"running\""));
}

TEST_CASE("engine: a poll whose deadline passed while it was not running fails at once") {
  Fixture f;
  Checkpoint cp;
  cp.step = 1;
  cp.vars = {{"job", "1"}};
  cp.step_started_ms = corral::unix_ms_now() - 60000;
  cp.deadline_ms = corral::unix_ms_now() - 1000;
  f.start(job_scenario(2, false), 1, cp);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto step = f.of("step").back();
  CHECK(step["state"] == "failed");
  CHECK(step["attempts"] == 0);
  CHECK_THAT(step["reason"].get<std::string>(), Catch::StartsWith("poll timed out"));
}

TEST_CASE("engine: cancelling a run drops its instances without events") {
  Fixture f;
  f.start(job_scenario(1000000, false), 50);
  REQUIRE(f.run_until([&] { return f.target->requests() >= 100; }));
  f.engine->cancel_run("r1");
  CHECK(f.engine->active() == 0);
  size_t before = f.events.size();
  uint64_t requests = f.target->requests();
  f.run_until([] { return false; }, 200);
  CHECK(f.events.size() == before);
  CHECK(f.target->requests() <= requests + 50);  // at most the transfers already in flight
  CHECK_FALSE(f.engine->has_run("r1"));
}

TEST_CASE("engine: a cancelled run's requests in flight are aborted, their connections closed") {
  Fixture f;
  corral::test::RawHttpServer never(&f.loop, [](const corral::test::RawRequest&) {
    return corral::test::Script{};  // never answers
  });
  json s = {{"name", "hang"},
            {"steps", {{{"request", {{"url", never.url("/hang")}, {"timeout", "60s"}}}}}}};
  f.start(s, 3);
  REQUIRE(f.run_until([&] { return never.open_connections() == 3; }));
  f.engine->cancel_run("r1");
  CHECK(f.run_until([&] { return never.open_connections() == 0; }, 5000));
  CHECK(f.http->in_flight() == 0);
  CHECK(f.events.empty());
  never.close();
}

TEST_CASE("engine: take_all hands back every running instance's checkpoint") {
  Fixture f;
  f.start(job_scenario(1000000, false), 3);
  REQUIRE(f.run_until([&] { return f.of("step", 2).size() == 1; }));
  json all = f.engine->take_all();
  CHECK(f.engine->active() == 0);
  REQUIRE(all["r1"].size() == 3);
  CHECK(all["r1"]["2"]["step"] == 1);
  CHECK(all["r1"]["2"]["vars"]["job"].is_string());
  CHECK(all["r1"]["2"]["deadline_ms"].get<int64_t>() > 0);
}

TEST_CASE("engine: abort_if ends the instance at once, with no retry and no further poll") {
  Fixture f;
  json s = {{"name", "abort"},
            {"steps",
             {{{"request", {{"url", "{{base}}/flaky/a?fail=5"}}},
               {"abort_if", {{{"status", 503}}}},
               {"expect", {{{"status", 200}}}},
               {"retry", {{"attempts", 4}, {"initial_interval", "10ms"}}}}}}};
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto step = f.of("step").back();
  CHECK(step["state"] == "failed");
  CHECK(step["attempts"] == 1);
  CHECK(step["reason"] == "abort_if held: status was 503");
  CHECK(f.of("done")[0]["state"] == "failed");
}

TEST_CASE("engine: a status in retry.non_retryable is not tried again, and others still are") {
  Fixture f;
  const json retry = {{"attempts", 3}, {"initial_interval", "10ms"}, {"non_retryable", {501}}};
  json s = {{"name", "non-retryable"},
            {"steps",
             {{{"request", {{"url", "{{base}}/flaky/b?fail=1"}}},
               {"expect", {{{"status", 200}}}},
               {"retry", retry}},
              {{"request", {{"url", "{{base}}/fail?status=501"}}},
               {"expect", {{{"status", 200}}}},
               {"retry", retry}}}}};
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto steps = f.of("step");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0]["state"] == "passed");
  CHECK(steps[0]["attempts"] == 2);  // the 503 was tried again
  CHECK(steps[1]["state"] == "failed");
  CHECK(steps[1]["attempts"] == 1);  // the 501 was not
  CHECK(steps[1]["reason"] == "expect: status was 501, expected 200");
}

TEST_CASE("engine: a sleep with jitter lasts its own time for each instance, within the fraction") {
  Fixture f;
  json s = {{"name", "jitter"}, {"steps", {{{"sleep", "200ms"}, {"jitter", 0.5}}}}};
  f.start(s, 20);
  REQUIRE(f.run_until([&] { return f.done_count() == 20; }));
  std::set<int64_t> took;
  for (int i = 0; i < 20; ++i) {
    auto step = f.of("step", i).back();
    const int64_t ms = step["ended_ms"].get<int64_t>() - step["started_ms"].get<int64_t>();
    INFO("instance " << i << " slept " << ms << " ms");
    CHECK(ms >= 100);
    CHECK(ms < 1000);  // 300 at most, and the timer's slack on a busy machine
    took.insert(ms / 20);
  }
  CHECK(took.size() >= 4);  // not one length for all
}

TEST_CASE("engine: fresh instances start their first step at their place in the start spread") {
  Fixture f;
  json s = {{"name", "spread"}, {"start_spread", "400ms"}, {"steps", {{{"sleep", "0s"}}}}};
  const int64_t created = corral::unix_ms_now();
  REQUIRE(f.engine->define_run("r1", s, {}, {.size = 8, .created_ms = created}).is_ok());
  for (uint32_t i = 0; i < 8; ++i) REQUIRE(f.engine->start("r1", i, Checkpoint{}).is_ok());
  REQUIRE(f.run_until([&] { return f.done_count() == 8; }));
  for (uint32_t i = 0; i < 8; ++i) {
    INFO("instance " << i);
    auto step = f.of("step", i).back();
    CHECK(step["started_ms"].get<int64_t>() >= created + 50 * i);  // 400 ms * i / 8
    CHECK(f.of("done", i).back()["started_ms"] == step["started_ms"]);  // from its first step
  }
  // A resumed instance has its place behind it and goes on at once; a fresh one waits for it.
  json slow = {{"name", "slow"}, {"start_spread", "1h"}, {"steps", {{{"sleep", "0s"}}}}};
  REQUIRE(f.engine->define_run("r2", slow, {}, {.size = 2, .created_ms = created}).is_ok());
  Checkpoint cp;
  cp.step_started_ms = created;
  REQUIRE(f.engine->start("r2", 1, cp).is_ok());
  REQUIRE(f.engine->start("r2", 0, Checkpoint{}).is_ok());  // its place is now
  REQUIRE(f.run_until([&] { return f.done_count() == 10; }));
  CHECK(f.engine->active("r2") == 0);
  Checkpoint fresh;
  REQUIRE(f.engine->start("r2", 1, fresh).is_ok());  // its place is half an hour away
  CHECK_FALSE(f.run_until([&] { return f.done_count() == 11; }, 300));
  CHECK(f.engine->active("r2") == 1);
}
