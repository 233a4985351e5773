// The host's lease in its workers: a master stopped in its tracks cannot fence its host off,
// but its workers, which run on, stop acting once the lease they were given ends.
#include <catch2/catch.hpp>

#include <signal.h>

#include <thread>

#include "tests/support/harness_cluster.h"

using namespace corral::test;

TEST_CASE(
    "cluster: a host's workers stop acting when its lease ends, even with its master stopped") {
  PgDatabase db;
  JobApi api;
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1).with_args({"--journal", db.url()}));
  wait_registered(d);
  const int n = 200;
  // Polled every 200 ms: 1,000 polls a second while they run.
  std::string id = submit_run(d, job_poll_scenario("lease", 14000, "200ms"), n, api);
  d.wait_until([&] { return run_of(d, id)["counts"]["running"] == n; }, seconds(30),
               "every instance to start");
  auto polls = [&] { return api.stats()["polls"].get<uint64_t>(); };
  d.signal(SIGSTOP);  // the master only: its worker runs on
  const auto stopped = std::chrono::steady_clock::now();
  std::this_thread::sleep_until(stopped + milliseconds(500));
  const uint64_t early = polls();
  std::this_thread::sleep_until(stopped + milliseconds(2500));
  const uint64_t later = polls();
  INFO("polls at 0.5 s: " << early << ", at 2.5 s: " << later);
  CHECK(later > early + 500);  // the worker goes on without its master, within the lease
  // The lease ends at most 4 s after the stop (its last renewal was sent before it). A poll
  // built before then may still reach the target: a second later, none is on its way.
  std::this_thread::sleep_until(stopped + milliseconds(5000));
  const uint64_t held = polls();
  std::this_thread::sleep_until(stopped + milliseconds(7000));
  INFO("polls at 5 s: " << held);
  CHECK(polls() == held);
  CHECK(read_file(home.file("logs/worker-0.log")).find("the host's lease ended") !=
        std::string::npos);
  d.signal(SIGCONT);
  // Woken, the master finds its lease ended: it stops what it held, registers again, claims
  // its ranges anew and resumes them; every instance still passes, each step once.
  d.wait_until([&] { return d.api("GET", "/cluster").json["self"]["epoch"].get<int>() >= 2; },
               seconds(15), "the host to register again");
  wait_run_finished(d, id, seconds(60));
  check_steps_once(db, id, n);
  CHECK(api.stats()["jobs"] == n);
  CHECK(read_file(home.master_log()).find("stops every instance it holds") != std::string::npos);
}
