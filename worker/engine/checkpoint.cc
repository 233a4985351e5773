#include "worker/engine/checkpoint.h"

namespace corral::worker {

nlohmann::json to_json(const Checkpoint& c) {
  nlohmann::json j = {{"step", c.step},
                      {"attempts", c.attempts},
                      {"step_started_ms", c.step_started_ms},
                      {"poll_deadline_ms", c.poll_deadline_ms},
                      {"started_ms", c.started_ms}};
  if (c.vars.is_object() && !c.vars.empty()) j["vars"] = c.vars;
  return j;
}

Checkpoint checkpoint_from_json(const nlohmann::json& j) {
  Checkpoint c;
  c.step = j.value("step", 0u);
  c.attempts = j.value("attempts", 0u);
  c.step_started_ms = j.value("step_started_ms", int64_t{0});
  c.poll_deadline_ms = j.value("poll_deadline_ms", int64_t{0});
  c.started_ms = j.value("started_ms", int64_t{0});
  if (auto it = j.find("vars"); it != j.end() && it->is_object()) c.vars = *it;
  return c;
}

}  // namespace corral::worker
