// An instance's progress, explicit and serialisable: enough to continue it on another worker
// or after a restart. Times are wall-clock Unix milliseconds, so a deadline keeps its meaning
// across processes and downtime.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace corral::worker {

struct Checkpoint {
  uint32_t step = 0;             // index of the step to run (or being run)
  uint32_t attempts = 0;         // requests sent for this step so far
  int64_t step_started_ms = 0;   // when this step's first attempt started; 0 = not started
  int64_t poll_deadline_ms = 0;  // a poll step's absolute timeout; 0 = none
  int64_t started_ms = 0;        // when the instance started its first step
  nlohmann::json vars;           // captured variables (an object, or null when none)
};

nlohmann::json to_json(const Checkpoint& c);
// Missing fields keep their defaults; wrong types throw nlohmann::json::exception.
Checkpoint checkpoint_from_json(const nlohmann::json& j);

}  // namespace corral::worker
