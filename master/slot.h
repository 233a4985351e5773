// One entry of the master's fixed worker slot table, and the states a slot moves through.
//
//            spawn          ready msg        stop/kill sent          exit
//   (none) -------> starting -------> ready ---------------> stopping ------> exited
//                      |                |  \  leaving msg                        |
//                      |                |   `-----------> draining -- exit --> exited
//                      `-- exit --------+------------------------------------> exited
//   exited --reconcile--> backoff --(delay)--> starting
//   exited --reconcile--> errored --(errored_retry)--> starting
//   exited|backoff|errored --adopt a reload's successor--> ready
//
// A reload gives a slot a successor: a second process, started beside the current one and
// given no work until it has been ready and heartbeating for reload_grace. Then the current one
// is stopped (it hands its instances back by checkpoint) and, once it has exited, the slot
// adopts the successor as its process. A successor that fails is killed and the slot keeps its
// current process.
//
// A slot whose index is at or past the wanted count is removed once it has no process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "master/exit_reason.h"
#include "master/restart_policy.h"

namespace corral::master {

#define CORRAL_SLOT_STATES(X) \
  X(kStarting, "starting")    \
  X(kReady, "ready")          \
  X(kDraining, "draining")    \
  X(kStopping, "stopping")    \
  X(kExited, "exited")        \
  X(kBackoff, "backoff")      \
  X(kErrored, "errored")

enum class SlotState {
#define CORRAL_SLOT_ENUM(name, text) name,
  CORRAL_SLOT_STATES(CORRAL_SLOT_ENUM)
#undef CORRAL_SLOT_ENUM
};

std::string_view to_string(SlotState s);
// Whether a process may exist in this state.
bool has_process(SlotState s);
// The transition table above; the supervisor aborts on a transition it does not allow.
bool can_transition(SlotState from, SlotState to);

#define CORRAL_SUCCESSOR_STATES(X) \
  X(kStarting, "starting")         \
  X(kProbation, "probation")       \
  X(kPromoted, "promoted")         \
  X(kFailed, "failed")

enum class SuccessorState {
#define CORRAL_SUCCESSOR_ENUM(name, text) name,
  CORRAL_SUCCESSOR_STATES(CORRAL_SUCCESSOR_ENUM)
#undef CORRAL_SUCCESSOR_ENUM
};

std::string_view to_string(SuccessorState s);

// A reload's new process for a slot (see above).
struct Successor {
  SuccessorState state = SuccessorState::kStarting;
  uint64_t generation = 0;
  pid_t pid = 0;
  uint64_t started_at_ms = 0;  // monotonic
  uint64_t ready_at_ms = 0;    // 0 until ready
  uint64_t last_heard_ms = 0;  // its last frame, of any kind
  uint64_t rss_bytes = 0;
  bool kill_sent = false;  // once failed: SIGKILL was sent
};

struct Slot {
  int index = 0;
  SlotState state = SlotState::kBackoff;  // a new slot starts at once (next_start_at = 0)
  pid_t pid = 0;
  uint64_t generation = 0;  // unique per spawn; events from another generation are dropped
  int starts = 0;
  int restarts = 0;

  uint64_t started_at_ms = 0;  // monotonic
  uint64_t ready_at_ms = 0;    // 0 until ready
  // Its last frame, of any kind: a worker whose heartbeat waits behind frames the master has
  // not read yet is not hung.
  uint64_t last_heard_ms = 0;
  // The last time its process was seen making system calls while silent (Daemon::reconcile):
  // a loop starved of CPU, not stuck (Supervisor::on_progress).
  uint64_t last_progress_ms = 0;
  uint64_t rss_bytes = 0;
  double loop_lag_ms = 0;
  uint64_t active = 0;

  // What the master did to the current process, and when to escalate to SIGKILL.
  std::optional<ExitReason> kill_reason;
  uint64_t kill_deadline_ms = 0;
  bool sigkill_sent = false;
  std::optional<ExitReason> left_reason;  // the worker announced it is leaving
  uint64_t drain_deadline_ms = 0;         // a leaving worker is killed if still there then
  std::string protocol_error;             // the worker broke the IPC contract
  bool restart_requested = false;

  std::optional<ExitInfo> last_exit;
  uint64_t exited_at_ms = 0;  // monotonic
  uint64_t ready_for_ms = 0;  // how long the last process had been ready
  RestartHistory history;
  uint64_t next_start_at_ms = 0;
  std::string error;  // why the slot is errored

  std::optional<Successor> successor;  // during a reload
};

}  // namespace corral::master
