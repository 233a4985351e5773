#include <catch2/catch.hpp>

#include "master/restart_policy.h"

using corral::master::decide_restart;
using corral::master::ExitInfo;
using corral::master::ExitReason;
using corral::master::RestartDecision;
using corral::master::RestartHistory;
using corral::master::RestartPolicy;

namespace {

ExitInfo exit_with(ExitReason r) {
  ExitInfo e;
  e.reason = r;
  e.code = 1;
  return e;
}

RestartPolicy no_jitter() {
  RestartPolicy p;
  p.jitter = 0;
  return p;
}

}  // namespace

TEST_CASE("restart policy: delays grow 100 ms, x2, and stop at the 30 s cap") {
  RestartPolicy p = no_jitter();
  p.crash_loop_exits = 1000;  // keep the crash-loop rule out of the way
  RestartHistory h;
  uint64_t expected[] = {100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
  uint64_t now = 0;
  for (uint64_t want : expected) {
    auto d = decide_restart(p, h, exit_with(ExitReason::kCrash), now, 0, 0.5);
    CHECK_FALSE(d.errored);
    CHECK(d.delay_ms == want);
    now += 1;
  }
}

TEST_CASE("restart policy: jitter stays within +/- 20% of the delay and never passes the cap") {
  RestartPolicy p;
  RestartHistory h1, h2;
  auto low = decide_restart(p, h1, exit_with(ExitReason::kCrash), 0, 0, 0.0);
  auto high = decide_restart(p, h2, exit_with(ExitReason::kCrash), 0, 0, 0.999999);
  CHECK(low.delay_ms == 80);
  CHECK(high.delay_ms >= 119);
  CHECK(high.delay_ms <= 120);

  RestartHistory capped;
  capped.consecutive = 50;
  p.crash_loop_exits = 1000;  // keep the crash-loop rule out of the way
  auto d = decide_restart(p, capped, exit_with(ExitReason::kCrash), 0, 0, 0.999999);
  CHECK(d.delay_ms <= p.backoff_max_ms);
}

TEST_CASE("restart policy: the 10th unstable exit in a row is a crash loop, however slow") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  uint64_t now = 0;
  for (int i = 1; i <= 9; ++i) {
    auto d = decide_restart(p, h, exit_with(ExitReason::kCrash), now, 0, 0.5);
    REQUIRE_FALSE(d.errored);
    now += d.delay_ms + 10000;  // each start runs 10 s before it crashes: never stable
  }
  auto d = decide_restart(p, h, exit_with(ExitReason::kSignal), now, 0, 0.5);
  CHECK(d.errored);
  CHECK(d.delay_ms == p.errored_retry_ms);
  CHECK_THAT(d.why, Catch::Contains("crash loop: 10 exits in a row in 141s"));
  CHECK_THAT(d.why, Catch::Contains("signal"));
}

TEST_CASE("restart policy: with the default backoff, a worker that dies at start is errored "
          "within about a minute") {
  RestartPolicy p;  // the defaults, jitter included
  RestartHistory h;
  uint64_t now = 0;
  int exits = 0;
  for (RestartDecision d; !d.errored && exits < 100;) {
    d = decide_restart(p, h, exit_with(ExitReason::kCrash), now, 0, 0.999);
    ++exits;
    now += d.errored ? 0 : d.delay_ms + 50;  // 50 ms of start-up, then it dies again
  }
  CHECK(exits == p.crash_loop_exits);
  CHECK(now <= 70000);
}

TEST_CASE("restart policy: a stable run between crashes starts the count again") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  for (int i = 0; i < 9; ++i) {
    CHECK_FALSE(decide_restart(p, h, exit_with(ExitReason::kCrash), uint64_t(i), 0, 0.5).errored);
  }
  CHECK_FALSE(decide_restart(p, h, exit_with(ExitReason::kCrash), 100, 30000, 0.5).errored);
  CHECK(h.consecutive == 0);
  for (int i = 0; i < 9; ++i) {
    CHECK_FALSE(decide_restart(p, h, exit_with(ExitReason::kCrash), uint64_t(200 + i), 0, 0.5).errored);
  }
  CHECK(decide_restart(p, h, exit_with(ExitReason::kCrash), 300, 0, 0.5).errored);
}

TEST_CASE("restart policy: a worker that was ready for 30 s comes back at once, and its next "
          "crash starts over from the first delay") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  for (int i = 0; i < 6; ++i) decide_restart(p, h, exit_with(ExitReason::kCrash), i, 0, 0.5);
  auto unstable = decide_restart(p, h, exit_with(ExitReason::kCrash), 10, 29999, 0.5);
  CHECK(unstable.delay_ms == 6400);
  auto stable = decide_restart(p, h, exit_with(ExitReason::kCrash), 40000, 30000, 0.5);
  CHECK(stable.delay_ms == 0);
  CHECK(h.consecutive == 0);
  auto next = decide_restart(p, h, exit_with(ExitReason::kCrash), 40100, 0, 0.5);
  CHECK(next.delay_ms == 100);
}

TEST_CASE("restart policy: an exit the master asked for restarts at once and counts nothing") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  auto d = decide_restart(p, h, exit_with(ExitReason::kStopped), 0, 0, 0.5);
  CHECK_FALSE(d.errored);
  CHECK(d.delay_ms == 0);
  CHECK(h.consecutive == 0);
}

TEST_CASE("restart policy: cannot-initialise goes straight to errored, retried slowly") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  auto d = decide_restart(p, h, exit_with(ExitReason::kInitFailed), 0, 0, 0.5);
  CHECK(d.errored);
  CHECK(d.delay_ms == 60000);
  CHECK(d.why.find("cannot initialise") != std::string::npos);
}
