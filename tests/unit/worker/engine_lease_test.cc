// The host's lease in the worker (Engine::set_lease): past its end no instance starts a step or
// builds a request, whatever the loop was doing when it ended; a renewed lease lets each go on
// from where it was held.
#include <catch2/catch.hpp>

#include "tests/unit/worker/engine_fixture.h"

using namespace corral::test::engine;

namespace {

// Runs the loop for `ms` whatever happens.
void run_for(Fixture& f, uint64_t ms) {
  const uint64_t until = corral::monotonic_ms() + ms;
  f.run_until([&] { return corral::monotonic_ms() >= until; }, ms + 1000);
}

uint64_t in_ms(uint64_t ms) { return corral::monotonic_ms() + ms; }

size_t passed(const Fixture& f) {
  size_t n = 0;
  for (const auto& e : f.events) n += e["t"] == "done" && e["state"] == "passed" ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("engine: past the host's lease no instance polls, and a renewed lease lets them go on") {
  Fixture f;
  f.engine->set_lease(in_ms(60000));
  f.start(job_scenario(40, false), 3);  // 40 polls each, every 20 ms
  REQUIRE(f.run_until([&] { return f.target->polls() >= 15; }));
  f.engine->set_lease(corral::monotonic_ms());  // it ends now
  run_for(f, 100);                              // a poll in flight then may still be answered
  const uint64_t held_at = f.target->polls();
  const size_t events = f.events.size();
  run_for(f, 500);  // 25 poll intervals
  CHECK(f.target->polls() == held_at);
  CHECK(f.events.size() == events);
  CHECK(f.done_count() == 0);
  f.engine->set_lease(in_ms(60000));
  REQUIRE(f.run_until([&] { return f.done_count() == 3; }));
  CHECK(passed(f) == 3);
  for (uint32_t i = 0; i < 3; ++i) {
    auto steps = f.of("step", i);
    REQUIRE(steps.size() == 3);  // start, wait, rest: each once
    CHECK(steps[1]["state"] == "passed");
  }
}

TEST_CASE("engine: an instance placed after the host's lease ended waits for the next one") {
  Fixture f;
  f.engine->set_lease(corral::monotonic_ms());
  f.start(job_scenario(2, false), 2);
  run_for(f, 300);
  CHECK(f.target->requests() == 0);
  CHECK(f.events.empty());
  f.engine->set_lease(in_ms(60000));
  REQUIRE(f.run_until([&] { return f.done_count() == 2; }));
  CHECK(passed(f) == 2);
  CHECK(f.target->jobs() == 2);
}

TEST_CASE("engine: a request that waited for a free slot is not built once the lease has ended") {
  // One request at a time: the second instance's request waits in the client's queue, unbuilt,
  // behind the first one's.
  corral::worker::ClientOptions one;
  one.max_in_flight = 1;
  Fixture f(one);
  f.engine->set_lease(in_ms(60000));
  // Each request waits 1 s for an answer that never comes, and fails: its reason counts its tries.
  f.start({{"name", "slow"},
           {"steps", json::array({{{"request", {{"url", "{{base}}/hang"}, {"timeout", "1s"}}}}})}},
          2);
  REQUIRE(f.run_until([&] { return f.target->requests() == 1; }));
  f.engine->set_lease(corral::monotonic_ms());  // ends with one request in flight, one queued
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));  // the one in flight goes on
  run_for(f, 300);  // the slot is free: the queued one would have been built and sent by now
  CHECK(f.target->requests() == 1);
  CHECK(f.done_count() == 1);
  f.engine->set_lease(in_ms(60000));
  REQUIRE(f.run_until([&] { return f.done_count() == 2; }));
  CHECK(f.target->requests() == 2);
  // The held request counts one try, as one sent at once does.
  for (uint32_t i = 0; i < 2; ++i) {
    auto done = f.of("done", i);
    REQUIRE(done.size() == 1);
    INFO(done[0].dump());
    CHECK(done[0]["state"] == "errored");  // a transport error
    CHECK_THAT(done[0]["reason"].get<std::string>(), Catch::EndsWith("(1 tries)"));
  }
}
