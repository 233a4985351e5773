// The hooks part: which facts become hook events and when (hooks/payloads.h says what each
// sends, hooks/sender.h how). A worker's exit is reported after the reconcile that follows it,
// which decides the slot's next state; a run's end and quarantine as they happen; the journal's
// failure and recovery from the tick. Adding an event is its payload in hooks/payloads.cc and
// the call that fires it here. Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "master/hooks/payloads.h"
#include "master/hooks/sender.h"
#include "master/journal/journal.h"
#include "master/live_metrics.h"
#include "master/runs.h"
#include "master/supervisor.h"

namespace corral::master {

class HookService {
 public:
  // Counts each delivery's outcome in `metrics`.
  HookService(uv_loop_t* loop, LiveMetrics& metrics);

  // At start: this host and daemon as every event's source, and the config's hooks.
  void start(const config::Hooks& hooks);
  // A reload's config.
  void set_hooks(const config::Hooks& hooks) { sender_.set_hooks(hooks); }
  // The daemon finishes: deliveries in flight get `grace_ms` more.
  void stop(uint64_t grace_ms) { sender_.stop(grace_ms); }

  // Slot `slot`'s process `pid` (0: it could not be started) exited after `restarts`; the
  // supervisor recorded it as the slot's last exit. Reported by report_exits().
  void worker_exited(const Supervisor& supervisor, int slot, pid_t pid, int restarts);
  // After a reconcile: each exit noted since, with the state the slot went to.
  void report_exits(const Supervisor& supervisor, uint64_t now_ms);
  // `detail` is Runs::detail_json() of the run.
  void run_finished(const Run& run, const nlohmann::json& detail);
  void run_quarantined(const nlohmann::json& detail, int64_t now_ms);
  // From the tick: journal_failed and journal_recovered (`label` names the journal).
  void watch_journal(const journal::Journal& journal, const std::string& label);

  const HookSender& sender() const { return sender_; }

 private:
  HookSource source_;
  HookSender sender_;
  JournalWatch journal_watch_;
  std::vector<WorkerExit> exits_;  // noted, to report after the reconcile
};

}  // namespace corral::master
