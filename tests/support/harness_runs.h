// Runs through the daemon's API, for the integration tests: submit, look, wait.
#pragma once

#include <string>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"

namespace corral::test {

// POST /runs of `instances` instances of `scenario` with {{base}} = the job API; fails the
// test unless the daemon answers 201. Returns the run id.
std::string submit_run(Daemon& d, const Json& scenario, int instances, const JobApi& api);
// POST /runs of `instances` instances of `scenario` with no vars; fails the test unless the
// daemon answers 201. Returns the run id.
std::string post_run(Daemon& d, const Json& scenario, int instances);
// GET /runs/<id>.
Json run_of(Daemon& d, const std::string& id);
// How many of a run's instances are in `state`, from a GET /runs/<id> answer.
int count_in(const Json& run, const std::string& state);
// Waits until the run's state is "finished"; fails the test on the deadline.
void wait_run_finished(Daemon& d, const std::string& id, milliseconds timeout);
// The first `n` instances of the run, each with its steps.
Json instances_of(Daemon& d, const std::string& id, int n);
// "" when the instance passed with each of the scenario's `steps` steps recorded exactly once,
// in order, each passed; else what is wrong with it.
std::string history_problem(const Json& instance, int steps);
// How many of `instances` have a history_problem(); the first three are logged (UNSCOPED_INFO).
int count_history_problems(const Json& instances, int steps);
// Two steps: POST {{base}}/jobs for a job done after `done_after_ms` (capture "id"), then poll
// {{base}}/jobs/{{id}} every `every` until it is done (timeout 2 min).
Json job_poll_scenario(const std::string& name, int done_after_ms, const std::string& every);
// How many times `why` appears in the resume reasons of `instances`.
int count_resume_reason(const Json& instances, const std::string& why);

}  // namespace corral::test
