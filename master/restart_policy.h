// When to start a worker again after it exited: a pure function of the slot's history, the
// exit, and the time, so tests drive it with a fake clock.
//
// - An exit the master asked for (stop, restart, scale) restarts at once and counts nothing.
// - "Cannot initialise" (bad config) is not retried quickly: the slot goes to errored.
// - An exit after the worker had been ready for stable_after_ms is a fresh start: the history
//   is cleared and the worker comes back at once (a long-running worker that dies is replaced
//   without waiting).
// - Any other exit is unstable: the delay grows initial * factor^(n-1), capped, with +/- jitter.
//   The crash_loop_exits-th unstable exit in a row (no stable run between them) puts the slot
//   in errored, whatever the backoff: with the defaults that is about a minute of crashing. An
//   errored slot is retried every errored_retry_ms, never in a busy loop.
#pragma once

#include <cstdint>
#include <string>

#include "master/exit_reason.h"

namespace corral::master {

struct RestartPolicy {
  uint64_t backoff_initial_ms = 100;
  double backoff_factor = 2.0;
  uint64_t backoff_max_ms = 30000;
  double jitter = 0.2;  // the delay varies by +/- this fraction
  uint64_t stable_after_ms = 30000;
  int crash_loop_exits = 10;
  uint64_t errored_retry_ms = 60000;
};

struct RestartHistory {
  int consecutive = 0;         // unstable exits since the last stable run
  uint64_t first_unstable_ms = 0;  // monotonic time of the first of them
};

struct RestartDecision {
  bool errored = false;
  uint64_t delay_ms = 0;
  std::string why;  // for an errored slot: what a user reads in `corral status`
};

// Updates `history` with this exit and decides. `ready_for_ms` is how long the worker had been
// ready (0 if it never was); `unit_random` is in [0, 1) and drives the jitter.
RestartDecision decide_restart(const RestartPolicy& policy, RestartHistory& history,
                               const ExitInfo& exit, uint64_t now_ms, uint64_t ready_for_ms,
                               double unit_random);

}  // namespace corral::master
