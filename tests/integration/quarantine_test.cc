// A run whose workers keep dying is quarantined instead of killing workers in a loop: it is no
// longer placed, `corral show` and a hook say why, and `corral resume` places it again.
#include <catch2/catch.hpp>
#include <csignal>

#include "tests/support/harness.h"
#include "tests/support/harness_runs.h"

namespace corral::test {
namespace {

TEST_CASE("quarantine: a run whose workers hang three times is no longer placed until resumed") {
  TempHome home;
  const std::string hook_file = home.file("quarantined.json");
  // The worker's loop hangs ~0.5 s after it is ready, on every start: each life ends as hung
  // with the run's instances on it.
  Json config = {
      {"heartbeat_interval", "250ms"},
      {"heartbeat_timeout", "1s"},
      {"kill_grace", "1s"},
      {"backoff_initial", "50ms"},
      {"backoff_max", "300ms"},
      {"quarantine_after", 3},
      {"hooks", {{"run_quarantined", {{"command", {"sh", "-c", "cat > " + hook_file}}}}}}};
  Daemon d(home, DaemonOptions().with_workers(1).with_config(config).with_env("CORRAL_TEST_FAULT",
                                                                              "hang"));
  d.wait_ready(1);
  const Json scenario = {{"name", "sleepy"}, {"steps", {{{"sleep", "60s"}}}}};
  const std::string id = post_run(d, scenario, 4);

  Json run;
  wait_for(
      [&] {
        run = d.api("GET", "/runs/" + id).json;
        return run.value("state", "") == "quarantined";
      },
      seconds(60), "the run to be quarantined", [&] { return run.dump(); });
  const std::string reason = run.at("quarantine").at("reason");
  CHECK(reason.find("3 workers died while running its instances within 10m (the last: "
                    "worker_hung)") == 0);
  CHECK(reason.find("corral resume " + id) != std::string::npos);
  CHECK(run.at("quarantine").at("deaths") == 3);
  CHECK(d.worker(0).at("starts") >= 3);  // three lives ended with its instances

  CliResult show = run_cli({"show", id}, home.path());
  INFO(show.describe());
  CHECK(show.out.find("state      : quarantined") != std::string::npos);
  CHECK(show.out.find("quarantined: 3 workers died") != std::string::npos);
  std::string payload;
  wait_for([&] { return !(payload = read_file(hook_file)).empty(); }, seconds(10),
           "the run_quarantined hook's command to write its payload");
  Json hook = Json::parse(payload);
  CHECK(hook.at("event") == "run_quarantined");
  CHECK(hook.at("run") == id);
  CHECK(hook.at("reason") == reason);
  CHECK(read_file(home.master_log()).find("run " + id + ": quarantined: 3 workers died") !=
        std::string::npos);

  // Its workers go on dying of their own fault, but the run is not placed on them any more.
  hold_for([&] { return count_in(d.api("GET", "/runs/" + id).json, "queued") == 4; }, seconds(3),
           "the quarantined run's instances waiting");

  CliResult resumed = run_cli({"resume", id}, home.path());
  INFO(resumed.describe());
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.out == "corral: run " + id + ": resumed (queued)\n");
  CHECK(d.api("GET", "/runs/" + id).json.at("state") != "quarantined");
  wait_for([&] { return count_in(d.api("GET", "/runs/" + id).json, "running") > 0; }, seconds(20),
           "the resumed run's instances to be placed again");
  CliResult again = run_cli({"resume", id}, home.path());
  CHECK(again.exit_code != 0);
  CHECK(again.err.find("is not quarantined") != std::string::npos);
  CHECK(d.api("DELETE", "/runs/" + id).status == 200);
}

TEST_CASE("quarantine: a worker killed from outside counts against no run") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1).with_config(
                     {{"quarantine_after", 1}, {"backoff_initial", "50ms"}}));
  d.wait_ready(1);
  const std::string id = post_run(d, {{"name", "sleepy"}, {"steps", {{{"sleep", "60s"}}}}}, 2);
  wait_for([&] { return count_in(d.api("GET", "/runs/" + id).json, "running") == 2; }, seconds(10),
           "the instances to run");
  const pid_t pid = d.worker(0).at("pid");
  REQUIRE(::kill(pid, SIGKILL) == 0);
  d.wait_until([&] { return d.worker(0).at("pid") != pid && d.worker(0).at("state") == "ready"; },
               seconds(10), "the worker to be replaced");
  wait_for([&] { return count_in(d.api("GET", "/runs/" + id).json, "running") == 2; }, seconds(10),
           "the instances to run again");
  CHECK(d.api("GET", "/runs/" + id).json.at("state") == "running");
}

}  // namespace
}  // namespace corral::test
