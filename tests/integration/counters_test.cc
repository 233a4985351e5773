// A step's counters survive the death of the worker that ran it: max_attempts and
// retry.attempts bound the step across resumes, not per process.
#include <catch2/catch.hpp>

#include <signal.h>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

TEST_CASE("counters: a poll resumed after a worker kill continues its attempt count") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  // A job that never ends, polled every 50 ms at most 40 times: the step fails on attempt 40.
  // Progress is reported every 4 attempts (a tenth of max_attempts).
  Json s = Json::parse(R"({
    "name": "bounded poll",
    "steps": [
      {"request": {"method": "POST", "url": "{{base}}/jobs", "json": {"polls_to_done": 1000000}},
       "capture": {"job": {"json": "/id"}}},
      {"request": {"url": "{{base}}/jobs/{{job}}"},
       "poll": {"every": "50ms", "max_attempts": 40,
                "until": [{"json": "/status", "equals": "done"}]}}
    ]})");
  std::string id = submit_run(d, s, 1, api);
  // Kill the worker once about half the attempts are made.
  d.wait_until([&] { return api.stats()["polls"].get<int>() >= 20; }, seconds(20),
               "20 polls of the job");
  pid_t victim = d.worker(0)["pid"].get<pid_t>();
  REQUIRE(::kill(victim, SIGKILL) == 0);
  wait_run_finished(d, id, seconds(30));

  Json in = d.api("GET", "/runs/" + id + "/instances/0").json;
  INFO(in.dump());
  CHECK(in["state"] == "failed");
  CHECK(in["resume_reasons"] == Json{"worker_signal"});
  CHECK(in["steps"].back()["attempts"] == 40);
  CHECK_THAT(in["reason"].get<std::string>(), Catch::StartsWith("until not met after 40 attempts"));
  // Without the count carried over, the resumed step would poll 40 more times (60 in all).
  // With it, only the attempts since the last report that reached the master are made again:
  // reports come every 4 attempts and wait up to 50 ms in the worker's event batch, so one
  // report may be lost with the worker.
  int polls = api.stats()["polls"].get<int>();
  CHECK(polls >= 40);
  CHECK(polls <= 49);
}

TEST_CASE("counters: a request resumed after a worker kill continues its retry count") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  // Every try fails (503) and is retried 400 ms later, 6 tries in all.
  Json s = Json::parse(R"({
    "name": "bounded retry",
    "steps": [
      {"request": {"url": "{{base}}/flaky/k?fail=1000"}, "expect": [{"status": 200}],
       "retry": {"attempts": 6, "initial_interval": "400ms", "backoff": 1}}
    ]})");
  std::string id = submit_run(d, s, 1, api);
  d.wait_until([&] { return api.stats()["requests"].get<int>() >= 3; }, seconds(20),
               "3 tries of the request");
  pid_t victim = d.worker(0)["pid"].get<pid_t>();
  REQUIRE(::kill(victim, SIGKILL) == 0);
  wait_run_finished(d, id, seconds(30));

  Json in = d.api("GET", "/runs/" + id + "/instances/0").json;
  INFO(in.dump());
  CHECK(in["state"] == "failed");
  CHECK(in["steps"].back()["attempts"] == 6);
  // Each retry is reported before it waits: only a try in flight at the kill can repeat.
  int tries = api.stats()["requests"].get<int>();
  CHECK(tries >= 6);
  CHECK(tries <= 7);
}
