// What each hook event sends: one JSON object, built here from facts the daemon hands over.
// Every payload starts with the same four fields, then the event's own (docs/operations.md,
// "Hooks", shows one of each from a real run):
//   {"event": "worker_exit", "at": "2026-01-05T10:00:00Z", "host": "ci-7", "daemon_pid": 41,
//    ...}
// Pure functions, any thread; the journal watch is loop thread only, like the daemon's tick.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/hooks.h"
#include "master/exit_reason.h"
#include "master/journal/journal.h"

namespace corral::master {

// Which daemon sent an event: the same for all its events.
struct HookSource {
  std::string host;  // the machine's host name
  int64_t daemon_pid = 0;
};

// The four fields every payload starts with; `at_ms` is Unix ms.
nlohmann::json hook_envelope(config::HookEvent event, int64_t at_ms, const HookSource& source);

// A slot's worker process ended. `next_state` is the slot's state once the master decided what
// to do about it: "starting" (restarted at once), "backoff" (restarted after `restart_in_ms`),
// "errored" (a crash loop), "exited" (not restarted: the daemon is stopping) or "removed"
// (scaled down).
struct WorkerExit {
  int slot = 0;
  pid_t pid = 0;  // 0 when the process could not be started at all (reason spawn_failed)
  ExitInfo exit;
  int restarts = 0;  // the slot's restarts before this exit
  std::string next_state;
  int64_t restart_in_ms = -1;  // "backoff" only
};
nlohmann::json worker_exit_payload(const HookSource& source, const WorkerExit& w);

// A run ended. `detail` is Runs::detail_json() of the run (id, scenario, state, counts,
// created_at, finished_at, duration_ms percentiles, failures).
nlohmann::json run_finished_payload(const HookSource& source, const nlohmann::json& detail,
                                    int64_t created_ms, int64_t finished_ms);

// The workers running a run's instances kept dying: it is no longer placed. `detail` is
// Runs::detail_json() of the run, with its quarantine.
nlohmann::json run_quarantined_payload(const HookSource& source, const nlohmann::json& detail,
                                       int64_t at_ms);

// Journal writes started failing (`health` as it is now), or succeed again after failing since
// `failing_since_ms` (Unix ms).
nlohmann::json journal_failed_payload(const HookSource& source, const std::string& path,
                                      const journal::Journal::Health& health, int64_t now_ms);
nlohmann::json journal_recovered_payload(const HookSource& source, const std::string& path,
                                         const journal::Journal::Health& health,
                                         int64_t failing_since_ms, int64_t now_ms);

// Turns the journal's health, read on every tick, into its two events: journal_failed on the
// change from ok to failing, journal_recovered on the change back. The journal retries a failed
// batch every second, so a failure lasts longer than a tick and none is missed.
class JournalWatch {
 public:
  // The event `health` makes, if any. The first observation that is failing counts as a
  // change (the journal starts out ok).
  std::optional<config::HookEvent> observe(const journal::Journal::Health& health);
  // When the failures that just ended began (Unix ms): for journal_recovered.
  int64_t failing_since_ms() const { return failing_since_ms_; }

 private:
  bool failing_ = false;
  int64_t failing_since_ms_ = 0;
};

}  // namespace corral::master
