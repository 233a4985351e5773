// A libuv loop for unit tests of code that runs on one: run it until a condition holds, with a
// deadline, never a bare sleep. The destructor runs what is left and checks the loop closes.
#pragma once

#include <uv.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>

#include "shared/proc.h"

namespace corral::test {

struct TestLoop {
  TestLoop() { uv_loop_init(&loop); }
  ~TestLoop() {
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  TestLoop(const TestLoop&) = delete;
  TestLoop& operator=(const TestLoop&) = delete;

  // Runs the loop until `done` holds or `timeout_ms` pass; returns whether it holds.
  bool run_until(const std::function<bool()>& done, uint64_t timeout_ms = 10000) {
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, [](uv_timer_t*) {}, 5, 5);
    const uint64_t deadline = monotonic_ms() + timeout_ms;
    while (!done() && monotonic_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);
    return done();
  }

  uv_loop_t loop;
};

}  // namespace corral::test
