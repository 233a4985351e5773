// Memory-aware admission: a run larger than what fits in the workers' memory budget waits in
// the master's queue, with the reason shown, instead of pushing workers past max_memory (which
// would replace them, over and over).
#include <catch2/catch.hpp>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

TEST_CASE("admission: a run larger than the workers' memory waits, says why, and no worker "
          "restarts") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2).with_args({"--max-memory", "28MB"}));
  d.wait_ready(2);
  constexpr int kInstances = 30000;
  std::string id = submit_run(d, job_poll_scenario("admission", 3000, "1s"), kInstances, api);

  Json run;
  d.wait_until(
      [&] {
        run = d.api("GET", "/runs/" + id).json;
        return run.contains("queued_reason");
      },
      seconds(20), "instances queued for want of memory");
  INFO(run.dump());
  CHECK_THAT(run["queued_reason"].get<std::string>(),
             Catch::Contains("every worker holds what fits in its memory budget"));
  CHECK(run["counts"]["queued"].get<int>() > 0);
  CHECK_THAT(d.api("GET", "/metrics").body,
             Catch::Contains("corral_queue_blocked{reason=\"memory\"} 1"));
  CliResult show = run_cli({"show", id}, home.path());
  CHECK_THAT(show.out, Catch::Contains("queued because every worker holds what fits"));

  wait_run_finished(d, id, seconds(150));
  CHECK(run_of(d, id)["counts"]["passed"] == kInstances);
  for (int slot : {0, 1}) {
    Json w = d.worker(slot);
    INFO("slot " << slot << ": " << w.dump());
    CHECK(w["restarts"] == 0);
    CHECK(w["last_exit"].is_null());
    CHECK(w["rss_bytes"].get<uint64_t>() < 28000000);
  }
  CHECK(api.stats()["jobs"] == kInstances);  // no step ran twice
}
