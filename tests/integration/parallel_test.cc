// Parallel steps through the real daemon against corral-target: the example passes with every
// branch step recorded once, and an instance whose branches are half done resumes each branch
// where it was, whether its worker is killed with SIGKILL or the master is.
#include <catch2/catch.hpp>

#include <signal.h>

#include <set>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

// "" when the instance passed with each of steps 0..steps-1 recorded once, passed; else what
// is wrong. Branches record their steps in any order.
std::string each_step_once(const Json& in, int steps) {
  if (in["state"] != "passed") return "state " + in["state"].dump() + ": " + in["reason"].dump();
  std::multiset<int> seen;
  for (const Json& s : in["steps"]) {
    if (s["state"] != "passed") return "step " + s.dump();
    seen.insert(s["step"].get<int>());
  }
  for (int k = 0; k < steps; ++k) {
    if (seen.count(k) != 1) return "step " + std::to_string(k) + " recorded " +
                                   std::to_string(seen.count(k)) + " times: " + in["steps"].dump();
  }
  return seen.size() == static_cast<size_t>(steps) ? "" : "history " + in["steps"].dump();
}

// Step 0 runs branch "a" (POST a job, sleep `hold`, read the job: steps 2, 3, 4) beside branch
// "b" (two sleeps: steps 5, 6); step 1 reads a's job after the join.
Json half_done(const std::string& hold) {
  Json post = {{"request", {{"method", "POST"}, {"url", "{{base}}/jobs"}, {"json", {{"done_after_ms", 0}}}}},
               {"expect", {{"status", 201}}},
               {"capture", {{"job", {{"json", "/id"}}}}}};
  Json read = {{"request", {{"url", "{{base}}/jobs/{{job}}"}}}, {"expect", {{"status", 200}}}};
  return {{"name", "half done"},
          {"steps",
           {{{"parallel",
              {{{"name", "a"}, {"steps", {post, {{"sleep", hold}}, read}}},
               {{"name", "b"}, {"steps", {{{"sleep", "500ms"}}, {{"sleep", hold}}}}}}}},
            {{"request", {{"url", "{{base}}/jobs/{{a.job}}"}}}, {"expect", {{"status", 200}}}}}}};
}

// Waits until every instance recorded branch a's POST (step 2) and branch b's first sleep.
void wait_branches_started(Daemon& d, const std::string& id, int n) {
  d.wait_until(
      [&] {
        Json all = instances_of(d, id, n);
        int started = 0;
        for (const Json& in : all) {
          std::set<int> steps;
          for (const Json& s : in["steps"]) steps.insert(s["step"].get<int>());
          started += steps.count(2) == 1 && steps.count(5) == 1 ? 1 : 0;
        }
        return started == n;
      },
      seconds(30), "every instance of " + id + " to be half way through its branches");
}

void check_resumed_run(Daemon& d, const std::string& id, int n, const JobApi& api) {
  wait_run_finished(d, id, seconds(90));
  CHECK(run_of(d, id)["counts"]["passed"] == n);
  Json all = instances_of(d, id, n);
  REQUIRE(all.size() == static_cast<size_t>(n));
  for (const Json& in : all) {
    INFO("instance " << in["i"] << ": " << in.dump());
    CHECK(each_step_once(in, 7) == "");
    CHECK(in["vars"].contains("a.job"));
  }
  CHECK(api.stats()["jobs"] == n);  // no branch's POST was sent twice
}

}  // namespace

TEST_CASE("parallel: the example passes, each branch's steps recorded once under its branch") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  Json scenario = Json::parse(read_file(std::string(CORRAL_EXAMPLES_DIR) + "/parallel.json"));
  const int n = 40;
  std::string id = submit_run(d, scenario, n, api);
  wait_run_finished(d, id, seconds(60));
  CHECK(run_of(d, id)["counts"]["passed"] == n);
  Json all = instances_of(d, id, n);
  REQUIRE(all.size() == static_cast<size_t>(n));
  for (const Json& in : all) {
    INFO("instance " << in["i"] << ": " << in.dump());
    CHECK(each_step_once(in, 8) == "");
    CHECK(in["vars"].contains("eu.job"));
    CHECK(in["vars"].contains("us.job"));
    for (const Json& s : in["steps"]) {
      int step = s["step"];
      CHECK(s.value("branch", "") == (step >= 6 ? "us" : step >= 4 ? "eu" : ""));
    }
  }
  CHECK(api.stats()["jobs"] == 3 * n);
}

TEST_CASE("parallel: branches resume where they were after their worker is killed with SIGKILL") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  const int n = 20;
  std::string id = submit_run(d, half_done("3s"), n, api);
  wait_branches_started(d, id, n);
  // Mid-way, the instance record says where each branch is.
  Json one = d.api("GET", "/runs/" + id + "/instances/0").json;
  INFO(one.dump());
  REQUIRE(one["branches"].size() == 2);
  CHECK(one["branches"][0]["name"] == "a");
  const pid_t victim = d.worker(0).at("pid");
  REQUIRE(::kill(victim, SIGKILL) == 0);
  check_resumed_run(d, id, n, api);
  int resumed = 0;
  for (const Json& in : instances_of(d, id, n)) resumed += in["resume_reasons"].empty() ? 0 : 1;
  CHECK(resumed > 0);
}

TEST_CASE("parallel: branches resume where they were after the master is killed and restarted") {
  TempHome home;
  JobApi api;
  auto opts = DaemonOptions().with_workers(2);
  auto d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(2);
  const int n = 20;
  std::string id = submit_run(*d, half_done("4s"), n, api);
  wait_branches_started(*d, id, n);
  // What the API shows is journaled a few ms later: kill once it is, so that no recorded step
  // runs again (the branches wait 4 s, writing nothing meanwhile).
  d->wait_until([&] { return d->api("GET", "/health").json["journal"]["queued_writes"] == 0; },
                seconds(10), "the journal to catch up");
  d->signal(SIGKILL);
  d->wait_exit(seconds(10));
  d = std::make_unique<Daemon>(home, opts);
  check_resumed_run(*d, id, n, api);
  CHECK(count_resume_reason(instances_of(*d, id, n), "master_restart") == n);
}
