// Memory-aware admission: a run larger than what fits in the workers' memory budget waits in
// the master's queue, with the reason shown, instead of pushing workers past max_memory (which
// would replace them, over and over).
#include <catch2/catch.hpp>

#include <fstream>

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

TEST_CASE("admission: a 10-instance run submitted behind a run that fills the workers finishes "
          "within seconds") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(2).with_config({{"worker_instances", 50}}));
  d.wait_ready(2);
  // 100 at a time for 300 ms each: 100,000 instances take 5 minutes to go through the workers.
  const Json large = {{"name", "large"}, {"steps", Json::array({{{"sleep", "300ms"}}})}};
  const Json smoke = {{"name", "smoke"}, {"steps", Json::array({{{"sleep", "10ms"}}})}};
  auto submit = [&](const Json& scenario, int n) {
    ApiResponse r = d.api("POST", "/runs", Json{{"scenario", scenario}, {"instances", n}}.dump());
    INFO(r.body);
    REQUIRE(r.status == 201);
    return r.json["run"].get<std::string>();
  };
  const std::string big = submit(large, 100000);
  d.wait_until([&] { return run_of(d, big)["counts"]["running"] == 100; }, seconds(10),
               "the large run to fill both workers");
  const std::string small = submit(smoke, 10);
  wait_run_finished(d, small, seconds(10));
  CHECK(run_of(d, small)["counts"]["passed"] == 10);
  const Json counts = run_of(d, big)["counts"];
  INFO(counts.dump());
  CHECK(counts["queued"].get<int>() > 90000);  // it went first, the large one still waits
  CHECK(d.api("DELETE", "/runs/" + big).status == 200);
}

TEST_CASE("admission: a run's priority is checked, kept and shown") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const Json scenario = {{"name", "p"}, {"steps", Json::array({{{"sleep", "10ms"}}})}};
  ApiResponse bad = d.api("POST", "/runs", Json{{"scenario", scenario}, {"priority", 0}}.dump());
  CHECK(bad.status == 400);
  CHECK(bad.json["error"] == "priority: expected an integer from 1 to 100, got 0");
  const std::string file = home.file("p.json");
  std::ofstream(file) << scenario.dump();
  CliResult run = run_cli({"run", file, "-n", "3", "--priority", "7"}, home.path());
  INFO(run.describe());
  REQUIRE(run.exit_code == 0);
  const Json runs = d.api("GET", "/runs").json["runs"];
  REQUIRE(runs.size() == 1);
  const std::string id = runs[0]["id"];
  CHECK(run_of(d, id)["priority"] == 7);
  CHECK_THAT(run_cli({"show", id}, home.path()).out, Catch::Contains("priority   : 7"));
  CHECK(run_cli({"run", file, "--priority", "101"}, home.path()).exit_code == 2);
}
