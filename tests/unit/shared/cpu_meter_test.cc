// CPU use from successive readings of a process's CPU time.
#include <catch2/catch.hpp>

#include "shared/cpu_meter.h"

namespace corral {
namespace {

using std::chrono::milliseconds;

const CpuMeter::Clock::time_point kT0{};

TEST_CASE("cpu meter: a percent of one CPU from the ticks between two readings") {
  CpuMeter meter(100);                       // 100 ticks a second
  CHECK_FALSE(meter.update(42, 1000, kT0));  // the first reading has nothing to compare with
  auto half = meter.update(42, 1050, kT0 + milliseconds(1000));
  REQUIRE(half);
  CHECK(*half == Approx(50));
  auto two_cpus = meter.update(42, 1250, kT0 + milliseconds(2000));
  REQUIRE(two_cpus);
  CHECK(*two_cpus == Approx(200));
  CHECK_FALSE(meter.update(42, 1300, kT0 + milliseconds(2000)));  // no time passed
}

TEST_CASE("cpu meter: an unreadable or replaced process starts over") {
  CpuMeter meter(100);
  meter.update(42, 1000, kT0);
  CHECK_FALSE(meter.update(42, std::nullopt, kT0 + milliseconds(1000)));
  CHECK_FALSE(meter.update(42, 1100, kT0 + milliseconds(2000)));  // forgotten: a first reading
  CHECK(meter.update(42, 1200, kT0 + milliseconds(3000)));
  meter.keep_only({43});  // pid 42 was replaced by pid 43
  CHECK_FALSE(meter.update(42, 1300, kT0 + milliseconds(4000)));
  CHECK_FALSE(meter.update(43, 5, kT0 + milliseconds(4000)));
  // Ticks that go backwards are not a reading to compare with.
  CHECK_FALSE(meter.update(43, 1, kT0 + milliseconds(5000)));
}

}  // namespace
}  // namespace corral
