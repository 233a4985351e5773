// usable_cpus(): cgroup v2 cpu.max parsing and how quotas combine with the affinity mask.
#include <catch2/catch.hpp>
#include <thread>

#include "config/config.h"

namespace corral::config {
namespace {

TEST_CASE("config cpus: reads the CPU limit out of cpu.max, with no limit for \"max\"") {
  struct Case {
    const char* contents;
    std::optional<double> cpus;
  };
  const Case cases[] = {
      {"150000 100000\n", 1.5},    {"200000 100000", 2.0},
      {"50000 100000\n", 0.5},     {"max 100000\n", std::nullopt},
      {"", std::nullopt},          {"garbage", std::nullopt},
      {"100000", std::nullopt},    {"0 100000", std::nullopt},
      {"100000 0", std::nullopt},  {"-1 100000", std::nullopt},
      {"1x 100000", std::nullopt}, {"100000 100000 7", std::nullopt},
  };
  for (const Case& c : cases) {
    CAPTURE(c.contents);
    CHECK(parse_cpu_max(c.contents) == c.cpus);
  }
}

TEST_CASE("config cpus: limits the affinity count by the smallest quota, rounded up, at least 1") {
  struct Case {
    int affinity;
    std::vector<std::string> cpu_max;
    int expected;
  };
  const Case cases[] = {
      {8, {}, 8},
      {8, {"150000 100000\n"}, 2},
      {8, {"max 100000\n"}, 8},
      {8, {"250000 100000"}, 3},
      {8, {"50000 100000"}, 1},
      {2, {"800000 100000"}, 2},
      {8, {"max 100000", "300000 100000", "500000 100000"}, 3},  // nested: the minimum wins
      {8, {"500000 100000", "300000 100000", "max 100000"}, 3},
      {8, {"garbage", "400000 100000"}, 4},
      {0, {}, 1},
      {1, {"max 100000"}, 1},
  };
  for (const Case& c : cases) {
    CAPTURE(c.affinity, c.cpu_max);
    CHECK(cpus_from(c.affinity, c.cpu_max) == c.expected);
  }
}

TEST_CASE("config cpus: usable_cpus on this machine is between 1 and the hardware CPU count") {
  int cpus = usable_cpus();
  CHECK(cpus >= 1);
  CHECK(cpus <= static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace corral::config
