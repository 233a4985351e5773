// The engine's boundaries: deadlines that bound a step, counters that survive a resume,
// failures inside the engine that end one instance, and values that cannot go where a step
// puts them.
#include <catch2/catch.hpp>

#include "tests/unit/worker/engine_fixture.h"

using namespace corral::test::engine;

namespace {

json one_step(const json& step) { return {{"name", "one"}, {"steps", json::array({step})}}; }

std::string reason_of(const Fixture& f, uint32_t i = 0) {
  auto done = f.of("done", i);
  REQUIRE(done.size() == 1);
  return done[0]["reason"];
}

}  // namespace

TEST_CASE("engine: an exception inside a step takes only that instance down") {
  Fixture f;
  // The first step event of instance 1 cannot be reported: as if the engine hit a bug there.
  f.throw_when = [](const json& ev) { return ev["t"] == "step" && ev["i"] == 1; };
  f.start(job_scenario(2, false), 3);
  REQUIRE(f.run_until([&] { return f.of("done", 0).size() == 1 && f.of("done", 2).size() == 1; }));
  CHECK(f.of("done", 0)[0]["state"] == "passed");
  CHECK(f.of("done", 2)[0]["state"] == "passed");
  // Instance 1 could not even report its end (emit throws for it): it is dropped, not crashed.
  CHECK(f.engine->active() == 0);
}

TEST_CASE("engine: a failure while reporting ends the instance with the failure as reason") {
  Fixture f;
  int thrown = 0;
  f.throw_when = [&](const json& ev) {
    return ev["t"] == "step" && ev["state"] == "passed" && thrown++ == 0;
  };
  f.start(job_scenario(2, false));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done");
  CHECK(done[0]["state"] == "errored");
  CHECK(done[0]["reason"] == "internal error in handling a response: emit failed on purpose");
}

TEST_CASE("engine: a poll's deadline cuts the request in flight") {
  Fixture f;
  f.start(one_step(
      {{"request", {{"url", "{{base}}/hang"}}},
       {"poll", {{"every", "50ms"}, {"timeout", "400ms"}, {"until", {{{"status", 200}}}}}}}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }, 5000));
  auto step = f.of("step").back();
  CHECK(step["state"] == "failed");
  CHECK_THAT(step["reason"].get<std::string>(),
             Catch::StartsWith("poll timed out after 400ms (last request in flight "));
  int64_t took = step["ended_ms"].get<int64_t>() - step["started_ms"].get<int64_t>();
  CHECK(took >= 400);
  CHECK(took < 2000);  // the request's own timeout is 30 s
}

TEST_CASE("engine: a request step's timeout bounds its retries and the try in flight") {
  Fixture f;
  f.start(one_step({{"request", {{"url", "{{base}}/flaky/t?fail=1000"}}},
                    {"expect", {{{"status", 200}}}},
                    {"retry", {{"attempts", 100}, {"initial_interval", "100ms"}, {"backoff", 1}}},
                    {"timeout", "450ms"}}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }, 5000));
  auto step = f.of("step").back();
  CHECK(step["state"] == "failed");
  CHECK_THAT(step["reason"].get<std::string>(), Catch::StartsWith("step timed out after 450ms"));
  CHECK(step["attempts"].get<int>() >= 3);
  CHECK(step["attempts"].get<int>() <= 6);
}

TEST_CASE("engine: a retry reports its count, and a resumed request continues it") {
  Fixture f;
  json s = one_step({{"request", {{"url", "{{base}}/flaky/r?fail=1000"}}},
                     {"expect", {{{"status", 200}}}},
                     {"retry", {{"attempts", 4}, {"initial_interval", "10ms"}}}});
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto progress = f.of("progress");
  REQUIRE(progress.size() == 3);  // after tries 1, 2 and 3; the 4th ends the step
  CHECK(progress[2]["checkpoint"]["tries"] == 3);
  CHECK(f.target->requests() == 4);

  // Resumed with three tries spent, it makes one more and fails.
  f.events.clear();
  Checkpoint cp;
  cp.tries = 3;
  cp.attempts = 3;
  cp.step_started_ms = corral::unix_ms_now();
  REQUIRE(f.engine->start("r1", 9, cp).is_ok());
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.target->requests() == 5);
  CHECK(f.of("step", 9)[0]["attempts"] == 4);
}

TEST_CASE("engine: a poll with max_attempts reports its attempts, and a resumed poll continues") {
  Fixture f;
  auto s = job_scenario(1000000, false);
  s["steps"][1]["poll"]["max_attempts"] = 20;  // reported every 2 attempts (a tenth)
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto progress = f.of("progress");
  REQUIRE(progress.size() == 9);  // attempts 2, 4, ... 18; the 20th ends the step
  CHECK(progress[0]["checkpoint"]["attempts"] == 2);
  CHECK(progress[0]["checkpoint"]["vars"]["job"].is_string());

  // Another index reports at another phase: instances started together do not all report
  // at once.
  f.events.clear();
  REQUIRE(f.engine->start("r1", 1, Checkpoint{}).is_ok());
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto shifted = f.of("progress", 1);
  REQUIRE(shifted.size() == 10);  // attempts 1, 3, ... 19
  CHECK(shifted[0]["checkpoint"]["attempts"] == 1);
  CHECK(shifted.back()["checkpoint"]["attempts"] == 19);

  f.events.clear();
  auto cp = corral::ipc::checkpoint_from_json(progress.back()["checkpoint"]);
  REQUIRE(cp.is_ok());
  REQUIRE(f.engine->start("r1", 4, *cp).is_ok());
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto step = f.of("step", 4).back();
  CHECK(step["attempts"] == 20);
  CHECK_THAT(step["reason"].get<std::string>(),
             Catch::StartsWith("until not met after 20 attempts"));
}

TEST_CASE("engine: a template that cannot expand ends the instance errored, naming why") {
  Fixture f;
  f.start(one_step(
      {{"request",
        {{"url", "{{base}}/echo"}, {"headers", {{"X-Env", "{{env.CORRAL_UNIT_UNSET_X}}"}}}}}}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("done")[0]["state"] == "errored");
  CHECK(reason_of(f) == "request: environment variable \"CORRAL_UNIT_UNSET_X\" is not set");
  CHECK(f.target->requests() == 0);
}

TEST_CASE("engine: secrets expand into requests and are masked in everything reported") {
  Fixture f;
  f.secrets.add("TOKEN", "s3cr3t-value");
  json s = json::parse(R"({"name": "secret", "steps": [
      {"request": {"url": "{{base}}/echo?t={{secret.TOKEN}}",
                   "headers": {"Authorization": "Bearer {{secret.TOKEN}}"}},
       "capture": {"seen": {"json": "/headers/authorization"}}},
      {"request": {"method": "POST", "url": "{{base}}/echo", "body": "{{seen}}"},
       "expect": [{"json": "/body", "equals": "nope"}]}]})");
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  std::string all = json(f.events).dump();
  CHECK(all.find("s3cr3t-value") == std::string::npos);
  auto steps = f.of("step");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0]["vars"]["seen"] == "Bearer {{secret.TOKEN}}");
  CHECK(steps[0]["vars"]["$secrets"]["seen"] == json{"TOKEN"});
  // The second request got the real value back (the echo saw it), and the reason is masked.
  CHECK_THAT(steps[1]["reason"].get<std::string>(), Catch::Contains("Bearer ***"));
  // The failed step's record has the start of the response, masked too.
  CHECK_THAT(steps[1]["body"].get<std::string>(),
             Catch::StartsWith("{\"body\":\"Bearer ***\"") && Catch::Contains("/echo"));
  CHECK_FALSE(steps[0].contains("body"));  // a passed step keeps none
}

TEST_CASE("engine: a failed step keeps the first 512 bytes of its response, a passed one none") {
  Fixture f;
  json s = json::parse(R"({"name": "big", "steps": [
      {"request": {"url": "{{base}}/big?bytes=100"}},
      {"request": {"url": "{{base}}/big?bytes=5000"}, "expect": [{"status": 201}]}]})");
  f.start(s);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto steps = f.of("step");
  REQUIRE(steps.size() == 2);
  CHECK_FALSE(steps[0].contains("body"));
  CHECK(steps[1]["state"] == "failed");
  CHECK(steps[1]["body"] == "{\"data\": \"" + std::string(512 - 10, 'x') + "\xE2\x80\xA6");
}
