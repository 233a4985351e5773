// An instance's progress, explicit and serialisable: enough to continue it on another worker
// or after a restart. Workers write checkpoints (in `progress` events and hand-backs), the
// master keeps them in the journal and sends them back in `start`; both sides use these
// functions, so the format has one definition.
//
//   {"step": 2, "attempts": 7, "tries": 1, "step_started_ms": 1764600000000,
//    "deadline_ms": 1764600030000, "started_ms": 1764599990000, "wake_ms": 1764600001000,
//    "vars": {wire vars}}
//
// Times are wall-clock Unix milliseconds, so a deadline keeps its meaning across processes
// and downtime. Pure, any thread.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::ipc {

struct Checkpoint {
  uint32_t step = 0;            // index of the step to run (or being run)
  uint32_t attempts = 0;        // poll attempts, or request tries, started for this step
  uint32_t tries = 0;           // failed tries of the current request (retries so far)
  int64_t step_started_ms = 0;  // when this step's first attempt started; 0 = not started
  int64_t deadline_ms = 0;      // the step's absolute deadline (poll or step timeout); 0 = none
  int64_t started_ms = 0;       // when the instance started its first step
  // When the step's next request is due, set when it moved between live workers: the poll's
  // interval or the retry's delay it was waiting out, or the moment it moved if it was in the
  // middle of a request. 0 = not known (its worker or host died): a poll makes its next
  // attempt at a point spread over its interval, any other step at once. Written only when
  // non-zero.
  int64_t wake_ms = 0;
  nlohmann::json vars;          // captured variables in their wire form (shared/ipc/vars.h)
  // What reached the instance's next callback step (steps/callback) before it moved:
  // {"step": u32, "body": <the caller's JSON> (once called), "heartbeat_ms": i64 (last ping)}.
  // Null when nothing did. Written only when set.
  nlohmann::json callback;
  // Inside a parallel step (steps/parallel): where each of its branches is, in branch order.
  // Each is null (not started), {"checkpoint": {...}} (this form, for the branch's own
  // position and captures), {"passed": {wire vars}} or {"failed": "why", "outcome": "errored"}.
  // Null outside a parallel step. Written only when set.
  nlohmann::json branches;

  bool operator==(const Checkpoint&) const = default;
};

nlohmann::json to_json(const Checkpoint& c);
// Appends the text of to_json(c) to `out` without building it as JSON first (a start frame
// carries up to 500 of them: StartWriter, control.h). Parsed, it equals to_json(c).
void append_json(const Checkpoint& c, std::string& out);
// Appends the text of a JSON value, as encode() would write it (not UTF-8: U+FFFD).
void append_json(const nlohmann::json& j, std::string& out);
// Strict: a field of the wrong type or range fails (kProtocol) with the field's path under
// `path`. Missing fields keep their defaults; empty "vars" read as none (null), the form
// to_json writes, so that a checkpoint decodes, encodes and decodes to an equal one.
// "poll_deadline_ms" is read as "deadline_ms" (checkpoints journaled by earlier versions).
Result<Checkpoint> checkpoint_from_json(const nlohmann::json& j,
                                        const std::string& path = "checkpoint");

}  // namespace corral::ipc
