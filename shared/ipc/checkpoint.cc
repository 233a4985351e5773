#include "shared/ipc/checkpoint.h"

#include <charconv>
#include <utility>

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
  if (!c.callback.is_null()) j["callback"] = c.callback;
  if (!c.branches.is_null()) j["branches"] = c.branches;
  return j;
}

namespace {
// `,"name":` (no comma before the first field).
void append_name(std::string& out, const char* name) {
  if (out.back() != '{') out += ',';
  out += '"';
  out += name;
  out += "\":";
}

void append_number(std::string& out, const char* name, int64_t v) {
  append_name(out, name);
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}
}  // namespace

void append_json(const nlohmann::json& j, std::string& out) {
  out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_json(const Checkpoint& c, std::string& out) {
  out += '{';
  const std::pair<const char*, int64_t> numbers[] = {{"step", c.step},
                                                     {"attempts", c.attempts},
                                                     {"tries", c.tries},
                                                     {"step_started_ms", c.step_started_ms},
                                                     {"deadline_ms", c.deadline_ms},
                                                     {"started_ms", c.started_ms}};
  for (const auto& [name, v] : numbers) append_number(out, name, v);
  // As to_json: each of the rest written only when set.
  if (c.wake_ms != 0) append_number(out, "wake_ms", c.wake_ms);
  const std::pair<const char*, const nlohmann::json*> nested[] = {
      {"vars", c.vars.is_object() && !c.vars.empty() ? &c.vars : nullptr},
      {"callback", c.callback.is_null() ? nullptr : &c.callback},
      {"branches", c.branches.is_null() ? nullptr : &c.branches}};
  for (const auto& [name, j] : nested) {
    if (j == nullptr) continue;
    append_name(out, name);
    append_json(*j, out);
  }
  out += '}';
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
  r.object("callback", c.callback);
  if (const auto b = j.find("branches"); j.is_object() && b != j.end() && !b->is_null()) {
    if (!b->is_array()) return protocol_error(path + ".branches: expected an array");
    for (size_t i = 0; i < b->size(); ++i) {
      if (!(*b)[i].is_null() && !(*b)[i].is_object()) {
        return protocol_error(path + ".branches[" + std::to_string(i) +
                              "]: expected an object or null");
      }
    }
    c.branches = *b;
  }
  if (!r.ok()) return r.status();
  if (c.callback.is_object()) {
    const auto step = c.callback.find("step");
    if (step == c.callback.end() || !step->is_number_integer() || step->get<int64_t>() < 0 ||
        step->get<int64_t>() > int64_t{UINT32_MAX}) {
      return protocol_error(path + ".callback.step: expected a step index");
    }
  }
  // No vars has one form, the one to_json writes: none (found by fuzz_ipc_payloads).
  if (c.vars.is_object() && c.vars.empty()) c.vars = nullptr;
  return c;
}

}  // namespace corral::ipc
