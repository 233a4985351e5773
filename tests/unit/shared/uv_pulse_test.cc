// uv::pulse(): a busy loop's callbacks run the heartbeat once it is overdue, never before.
#include <catch2/catch.hpp>

#include <uv.h>

#include "shared/uv/pulse.h"

namespace corral::uv {

TEST_CASE("pulse: the beat runs from a pulse once overdue, and not again until due again") {
  int beats = 0;
  set_pulse([&] {
    ++beats;
    pulse_due(uv_hrtime() + 3'600'000'000'000ull);  // as the worker's beat: the next in an hour
  });
  pulse_due(uv_hrtime() + 3'600'000'000'000ull);
  for (int i = 0; i < 1000; ++i) pulse();
  CHECK(beats == 0);  // not due
  pulse_due(uv_hrtime() - 1);
  for (int i = 0; i < 63; ++i) pulse();
  for (int i = 0; i < 64; ++i) pulse();  // a clock read every 64th call: at most 64 calls late
  CHECK(beats == 1);
  for (int i = 0; i < 1000; ++i) pulse();
  CHECK(beats == 1);  // the beat set the next due time
  set_pulse(nullptr);
  pulse_due(uv_hrtime() - 1);
  for (int i = 0; i < 1000; ++i) pulse();
  CHECK(beats == 1);  // off
  pulse_due(0);
}

TEST_CASE("pulse: a beat that pulses does not run itself again") {
  int beats = 0;
  set_pulse([&] {
    ++beats;
    for (int i = 0; i < 200; ++i) pulse();  // still overdue inside the beat
    pulse_due(uv_hrtime() + 3'600'000'000'000ull);
  });
  pulse_due(uv_hrtime() - 1);
  for (int i = 0; i < 128; ++i) pulse();
  CHECK(beats == 1);
  set_pulse(nullptr);
  pulse_due(0);
}

}  // namespace corral::uv
