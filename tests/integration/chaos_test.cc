// The chaos test of the "nothing lost" promise: 2,000 instances of a multi-step polling
// scenario while workers are killed with SIGKILL ten times and the master twice.
#include <catch2/catch.hpp>

#include <signal.h>

#include <random>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

constexpr int kInstances = 2000;
constexpr int kSteps = 4;

// Start a job done after 10 s, poll it every 500 ms; start one done after 6 polls, poll it
// every 500 ms. About 13 s per instance when nothing goes wrong.
const char* const kScenario = R"({
  "name": "chaos",
  "steps": [
    {"name": "start A", "request": {"method": "POST", "url": "{{base}}/jobs",
                                    "json": {"done_after_ms": 10000}},
     "expect": [{"status": 201}], "capture": {"a": {"json": "/id"}}},
    {"name": "wait for A", "request": {"url": "{{base}}/jobs/{{a}}"},
     "poll": {"every": "500ms", "timeout": "5m",
              "until": [{"json": "/status", "equals": "done"}]}},
    {"name": "start B", "request": {"method": "POST", "url": "{{base}}/jobs",
                                    "json": {"polls_to_done": 6}},
     "expect": [{"status": 201}], "capture": {"b": {"json": "/id"}}},
    {"name": "wait for B", "request": {"url": "{{base}}/jobs/{{b}}"},
     "poll": {"every": "500ms", "timeout": "5m",
              "until": [{"json": "/status", "equals": "done"}]}}
  ]})";

// Kills the worker of a random ready slot with SIGKILL and waits until the slot has a new,
// ready worker.
void kill_random_worker(Daemon& d, std::mt19937& rng) {
  Json workers = d.wait_ready(2, seconds(20));
  int slot = std::uniform_int_distribution<int>(0, 1)(rng);
  pid_t pid = workers[slot]["pid"].get<pid_t>();
  REQUIRE(pid > 0);
  REQUIRE(::kill(pid, SIGKILL) == 0);
  d.wait_until(
      [&] {
        Json w = d.worker(slot);
        return w["state"] == "ready" && w["pid"].get<pid_t>() != pid;
      },
      seconds(20), "slot " + std::to_string(slot) + " to be replaced");
}

}  // namespace

TEST_CASE(
    "chaos: 2,000 instances survive 10 worker kills and 2 master kills, each passing once "
    "with every step") {
  TempHome home;
  JobApi api;
  // A short backoff cap keeps ten kills from stretching the test.
  auto opts = DaemonOptions().with_workers(2).with_config({{"backoff_max", "500ms"}});
  auto d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(2);
  Json body = {{"scenario", Json::parse(kScenario)},
               {"instances", kInstances},
               {"vars", {{"base", api.base()}}}};
  auto submitted = d->api("POST", "/runs", body.dump());
  REQUIRE(submitted.status == 201);
  const std::string id = submitted.json["run"];

  std::mt19937 rng(std::random_device{}());
  // Five worker kills, the master, five more, the master again: all while instances run.
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 5; ++k) kill_random_worker(*d, rng);
    REQUIRE(run_of(*d, id)["state"] != "finished");
    d->signal(SIGKILL);
    d->wait_exit(seconds(10));
    d.reset();
    d = std::make_unique<Daemon>(home, opts);
  }
  d->wait_until([&] { return run_of(*d, id)["state"] == "finished"; }, seconds(180),
                "run " + id + " to finish");

  Json run = run_of(*d, id);
  INFO(run.dump());
  CHECK(run["counts"]["passed"] == kInstances);
  int total = 0;
  for (const auto& [state, n] : run["counts"].items()) total += n.get<int>();
  CHECK(total == kInstances);

  Json all = instances_of(*d, id, kInstances);
  REQUIRE(all.size() == kInstances);
  int bad = 0, resumes = 0;
  for (const Json& in : all) {
    std::string problem = history_problem(in, kSteps);
    if (!problem.empty() && ++bad <= 3) UNSCOPED_INFO("instance " << in["i"] << ": " << problem);
    resumes += static_cast<int>(in["resume_reasons"].size());
  }
  CHECK(bad == 0);
  // The kills happened while instances ran: both kinds of resume took place.
  int master_resumes = count_resume_reason(all, "master_restart");
  CHECK(master_resumes > 0);
  CHECK(resumes - master_resumes > 0);  // the others followed worker deaths
}
