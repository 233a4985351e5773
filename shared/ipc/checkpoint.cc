#include "shared/ipc/checkpoint.h"

#include "shared/ipc/fields.h"

namespace corral::ipc {

nlohmann::json to_json(const Checkpoint& c) {
  nlohmann::json j = {{"step", c.step},
                      {"attempts", c.attempts},
                      {"tries", c.tries},
                      {"step_started_ms", c.step_started_ms},
                      {"deadline_ms", c.deadline_ms},
                      {"started_ms", c.started_ms}};
  if (c.wake_ms != 0) j["wake_ms"] = c.wake_ms;
  if (c.vars.is_object() && !c.vars.empty()) j["vars"] = c.vars;
  return j;
}

Result<Checkpoint> checkpoint_from_json(const nlohmann::json& j, const std::string& path) {
  detail::FieldReader r(j, path);
  Checkpoint c;
  r.u32("step", c.step);
  r.u32("attempts", c.attempts);
  r.u32("tries", c.tries);
  r.i64("step_started_ms", c.step_started_ms);
  r.i64("poll_deadline_ms", c.deadline_ms);
  r.i64("deadline_ms", c.deadline_ms);
  r.i64("started_ms", c.started_ms);
  r.i64("wake_ms", c.wake_ms);
  r.object("vars", c.vars);
  if (!r.ok()) return r.status();
  // No vars has one form, the one to_json writes: none (found by fuzz_ipc_payloads).
  if (c.vars.is_object() && c.vars.empty()) c.vars = nullptr;
  return c;
}

}  // namespace corral::ipc
