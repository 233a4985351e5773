// Rebalancing seen from outside: a worker that returns after a kill -9, or one added by a
// scale-up, gets its share of the running instances back within seconds, moved by checkpoint,
// with no step repeated and every instance passing.
#include <catch2/catch.hpp>

#include <signal.h>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

constexpr int kInstances = 1000;
constexpr int kSteps = 2;

// One job per instance, done after 20 s, polled every 500 ms: every instance is mid-poll while
// a worker comes back.
Json rebalance_scenario() { return job_poll_scenario("rebalanced", 20000, "500ms"); }

int active(Daemon& d, int slot) { return d.worker(slot).value("active", 0); }

// Waits until every slot in `slots` runs at least 40 % of the instances.
void wait_even(Daemon& d, std::initializer_list<int> slots, const char* what) {
  d.wait_until(
      [&] {
        for (int s : slots) {
          if (active(d, s) < kInstances * 2 / 5) return false;
        }
        return true;
      },
      seconds(15), what);
}

void check_finished_once(Daemon& d, const std::string& id, const JobApi& api) {
  wait_run_finished(d, id, seconds(120));
  Json run = run_of(d, id);
  INFO(run.dump());
  CHECK(run["counts"]["passed"] == kInstances);
  CHECK(api.stats()["jobs"] == kInstances);  // no "start" step ran twice
  Json all = instances_of(d, id, kInstances);
  CHECK(count_history_problems(all, kSteps) == 0);
  CHECK(count_resume_reason(all, "rebalanced") > 0);
}

}  // namespace

TEST_CASE("rebalance: a worker back from a kill -9 gets its share of the instances again") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  const std::string id = submit_run(d, rebalance_scenario(), kInstances, api);
  d.wait_until([&] { return run_of(d, id)["counts"].value("running", 0) == kInstances; },
               seconds(30), "every instance to run");
  wait_even(d, {0, 1}, "both workers to run their share");

  const pid_t old = d.worker(0).at("pid");
  REQUIRE(::kill(old, SIGKILL) == 0);
  // Its instances resume on slot 1 while slot 0 restarts...
  d.wait_until(
      [&] {
        Json w = d.worker(0);  // one snapshot: state and pid from the same answer
        return w["state"] == "ready" && w["pid"] != old;
      },
      seconds(10), "slot 0 to be replaced");
  // ...and come back to it once it is ready.
  wait_even(d, {0, 1}, "slot 0 to get its share back");
  INFO("slot 0 " << active(d, 0) << ", slot 1 " << active(d, 1));
  check_finished_once(d, id, api);
}

TEST_CASE("rebalance: after a scale-up the new worker takes its share of the running instances") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const std::string id = submit_run(d, rebalance_scenario(), kInstances, api);
  d.wait_until([&] { return active(d, 0) == kInstances; }, seconds(30),
               "slot 0 to run every instance");
  CliResult up = run_cli({"scale", "2"}, home.path());
  INFO(up.describe());
  REQUIRE(up.exit_code == 0);
  wait_even(d, {0, 1}, "the new worker to take its share");
  check_finished_once(d, id, api);
}
