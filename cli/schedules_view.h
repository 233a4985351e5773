// How schedules read in the terminal: `corral schedule ls`. Pure function over the schedules
// API's JSON; any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/table.h"

namespace corral::cli {

// One row per schedule (GET /schedules "schedules"): name, cron, scenario, instances, state
// (active or paused), next tick, last tick and the run it fired. Times are UTC, to the minute.
std::string render_schedules_table(const nlohmann::json& schedules, TableStyle style);

}  // namespace corral::cli
