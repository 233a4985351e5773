// The events a worker reports to the master in `events` frames: state transitions of its
// instances, never single polls. Both sides encode and decode them here; an event of an
// unknown kind, or with a field of the wrong type, is the worker's protocol error.
//
//   step      a step ended: {"t":"step","run","i","step","state","attempts","started_ms",
//             "ended_ms","status","until_ms"?,"tls_us"?,"reason"?,"url"?,"body"?,"vars"?}
//             `tls_us` is the time its requests waited for TLS handshakes, when they did.
//             `body` is the start of the response of a step that failed on one: at most
//             kBodyExcerptBytes of printable UTF-8, secrets masked, with "…" after it when
//             the body was longer.
//             `url` is the final URL when redirects were followed; `vars` (wire form, see
//             vars.h) is present when the step captured something. A step inside a parallel
//             step's branch has "checkpoint": the instance's position (still at the parallel
//             step), its branches included; its captures are in there, not in `vars`.
//   done      an instance ended: {"t":"done","run","i","state","reason","started_ms","ended_ms"}
//   progress  a step's counters moved and must survive a crash (retries, and the attempts of
//             a poll that has max_attempts): {"t":"progress","run","i","checkpoint":{...}}
//
// Pure, any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "shared/ipc/checkpoint.h"
#include "shared/status.h"

namespace corral::ipc {

// The most bytes of a failed step's response body its record keeps (the "…" that says the body
// went on comes after them: Secrets::excerpt).
constexpr size_t kBodyExcerptBytes = 512;

// Closed tables: switch over them without `default` (-Werror=switch).
#define CORRAL_EVENT_KINDS(X) \
  X(kStep, "step")            \
  X(kDone, "done")            \
  X(kProgress, "progress")

#define CORRAL_OUTCOMES(X) \
  X(kPassed, "passed")     \
  X(kFailed, "failed")     \
  X(kErrored, "errored")   \
  X(kCancelled, "cancelled")

enum class EventKind : uint8_t {
#define CORRAL_IPC_ENUM_ITEM(name, text) name,
  CORRAL_EVENT_KINDS(CORRAL_IPC_ENUM_ITEM)
};
// How a step or an instance ended. A step is never cancelled.
enum class Outcome : uint8_t { CORRAL_OUTCOMES(CORRAL_IPC_ENUM_ITEM) };
#undef CORRAL_IPC_ENUM_ITEM

std::string_view to_string(EventKind k);
std::string_view to_string(Outcome o);
std::optional<Outcome> outcome_from(std::string_view text);

struct Event {
  EventKind kind = EventKind::kStep;
  std::string run;
  uint32_t index = 0;
  // step and done
  Outcome outcome = Outcome::kPassed;
  std::string reason;
  int64_t started_ms = 0, ended_ms = 0;
  // step
  uint32_t step = 0;
  uint32_t attempts = 0;
  int status = 0;         // the last HTTP status, 0 when none
  int64_t until_ms = -1;  // poll steps: time until the condition held; -1 = not a poll
  uint64_t tls_us = 0;    // TLS handshakes its requests waited for
  std::string url;        // the final URL after redirects; empty when none were followed
  std::string body;       // the start of the response of a failed step (see above)
  nlohmann::json vars;    // wire form; null when the step captured nothing
  bool in_branch = false;  // a step of a parallel step's branch: `checkpoint` is set
  // progress, and step events in a branch
  Checkpoint checkpoint;

  bool operator==(const Event&) const = default;
};

nlohmann::json to_json(const Event& e);
// Strict, like checkpoint_from_json; `path` names the event in messages ("events[3]").
Result<Event> event_from_json(const nlohmann::json& j, const std::string& path = "event");

}  // namespace corral::ipc
