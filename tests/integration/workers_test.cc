// How many workers the daemon runs, and that each is a live process of its own.
#include <sched.h>

#include <catch2/catch.hpp>
#include <set>

#include "tests/support/harness.h"

namespace corral::test {
namespace {

// Checks that `list` has `n` slots 0..n-1, all ready, each with its own live process.
void check_distinct_live_workers(const Json& list, int n, pid_t daemon_pid) {
  INFO("workers: " << list.dump());
  REQUIRE(static_cast<int>(list.size()) == n);
  std::set<pid_t> pids;
  std::set<int> slots;
  for (const auto& w : list) {
    pid_t pid = w.at("pid").get<pid_t>();
    CHECK(w.at("state") == "ready");
    CHECK(pid > 0);
    CHECK(pid != daemon_pid);
    CHECK(process_alive(pid));
    pids.insert(pid);
    slots.insert(w.at("slot").get<int>());
  }
  CHECK(static_cast<int>(pids.size()) == n);
  CHECK(static_cast<int>(slots.size()) == n);
  CHECK(*slots.begin() == 0);
  CHECK(*slots.rbegin() == n - 1);
}

TEST_CASE("workers: --workers 2 runs two ready workers with distinct live pids") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(2));
  Json list = daemon.wait_ready(2);
  check_distinct_live_workers(list, 2, daemon.pid());
  Json health = daemon.health();
  CHECK(health.at("workers_wanted") == 2);
  CHECK(health.at("workers_ready") == 2);
}

TEST_CASE("workers: without --workers the daemon runs one worker per usable CPU") {
  TempHome home;
  Daemon daemon(home);
  const int cpus = expected_usable_cpus();
  INFO("usable CPUs seen by the test (affinity and cgroup cpu.max): " << cpus);
  Json list = daemon.wait_ready(cpus);
  check_distinct_live_workers(list, cpus, daemon.pid());
  CHECK(daemon.health().at("workers_wanted") == cpus);
}

TEST_CASE("workers: the default count follows the affinity mask, not the host's cores") {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  REQUIRE(sched_getaffinity(0, sizeof(mask), &mask) == 0);
  if (CPU_COUNT(&mask) < 2) {
    WARN("only one usable CPU: pinning the daemon to one CPU would prove nothing");
    return;
  }
  int first = 0;
  while (!CPU_ISSET(first, &mask)) ++first;
  TempHome home;
  Daemon daemon(home, DaemonOptions().pinned_to(first));
  Json list = daemon.wait_ready(1);
  check_distinct_live_workers(list, 1, daemon.pid());
  CHECK(daemon.health().at("workers_wanted") == 1);
}

}  // namespace
}  // namespace corral::test
