// How runs read in the terminal: the runs table, one run's summary, one instance's steps.
// Pure functions over the runs API's JSON; any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/table.h"

namespace corral::cli {

// `corral runs`: one row per run (GET /runs "runs").
std::string render_runs_table(const nlohmann::json& runs, TableStyle style);
// `corral show RUN`: counts, durations and the most common failures (GET /runs/<id>).
std::string render_run(const nlohmann::json& run);
// `corral show RUN N`: the instance and a row per step (GET /runs/<id>/instances/<n>).
std::string render_instance(const nlohmann::json& instance, TableStyle style);
// One line of progress: "r1-3f2a  running  100 instances: 40 passed, 2 failed, 58 running".
std::string render_progress(const nlohmann::json& run);

}  // namespace corral::cli
