#include <catch2/catch.hpp>

#include "master/restart_policy.h"

using corral::master::decide_restart;
using corral::master::ExitInfo;
using corral::master::ExitReason;
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
  auto d = decide_restart(p, capped, exit_with(ExitReason::kCrash), 0, 0, 0.999999);
  CHECK(d.delay_ms <= p.backoff_max_ms);
}

TEST_CASE("restart policy: gives up after more than 10 unstable exits in 60 s") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  uint64_t now = 0;
  for (int i = 1; i <= 10; ++i) {
    auto d = decide_restart(p, h, exit_with(ExitReason::kCrash), now, 0, 0.5);
    REQUIRE_FALSE(d.errored);
    now += 1000;
  }
  auto d = decide_restart(p, h, exit_with(ExitReason::kSignal), now, 0, 0.5);
  CHECK(d.errored);
  CHECK(d.delay_ms == p.errored_retry_ms);
  CHECK(d.why.find("crash loop: 11 exits in 60s") != std::string::npos);
  CHECK(d.why.find("signal") != std::string::npos);
}

TEST_CASE("restart policy: exits spread wider than the window never make a crash loop") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  for (int i = 0; i < 30; ++i) {
    auto d = decide_restart(p, h, exit_with(ExitReason::kCrash), uint64_t(i) * 10000, 0, 0.5);
    CHECK_FALSE(d.errored);
  }
  CHECK(h.unstable_exits.size() <= 7);
}

TEST_CASE("restart policy: a worker that was ready for 30 s starts over from the first delay") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  for (int i = 0; i < 6; ++i) decide_restart(p, h, exit_with(ExitReason::kCrash), i, 0, 0.5);
  auto unstable = decide_restart(p, h, exit_with(ExitReason::kCrash), 10, 29999, 0.5);
  CHECK(unstable.delay_ms == 6400);
  auto stable = decide_restart(p, h, exit_with(ExitReason::kCrash), 40000, 30000, 0.5);
  CHECK(stable.delay_ms == 100);
  CHECK(h.unstable_exits.empty());
  auto next = decide_restart(p, h, exit_with(ExitReason::kCrash), 40100, 0, 0.5);
  CHECK(next.delay_ms == 200);
}

TEST_CASE("restart policy: an exit the master asked for restarts at once and counts nothing") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  auto d = decide_restart(p, h, exit_with(ExitReason::kStopped), 0, 0, 0.5);
  CHECK_FALSE(d.errored);
  CHECK(d.delay_ms == 0);
  CHECK(h.consecutive == 0);
  CHECK(h.unstable_exits.empty());
}

TEST_CASE("restart policy: cannot-initialise goes straight to errored, retried slowly") {
  RestartPolicy p = no_jitter();
  RestartHistory h;
  auto d = decide_restart(p, h, exit_with(ExitReason::kInitFailed), 0, 0, 0.5);
  CHECK(d.errored);
  CHECK(d.delay_ms == 60000);
  CHECK(d.why.find("cannot initialise") != std::string::npos);
}
