// The master's side of its hooks (hook_service.h).
#include "master/hook_service.h"

#include <unistd.h>

#include <algorithm>

#include "shared/proc.h"

namespace corral::master {

HookService::HookService(uv_loop_t* loop, LiveMetrics& metrics)
    : sender_(loop, {},
              [&metrics](config::HookEvent e, HookOutcome o) { metrics.hook_ended(e, o); }) {}

void HookService::start(const config::Hooks& hooks) {
  char host[256];
  size_t size = sizeof host;
  source_.host = uv_os_gethostname(host, &size) == 0 ? std::string(host, size) : "";
  source_.daemon_pid = getpid();
  sender_.set_hooks(hooks);
}

void HookService::worker_exited(const Supervisor& supervisor, int slot, pid_t pid, int restarts) {
  const Slot* s = supervisor.slot(slot);
  if (s == nullptr || !s->last_exit) return;
  WorkerExit w;
  w.slot = slot;
  w.pid = pid;
  w.exit = *s->last_exit;
  w.restarts = restarts;
  exits_.push_back(std::move(w));
}

void HookService::report_exits(const Supervisor& supervisor, uint64_t now_ms) {
  for (WorkerExit& w : exits_) {
    const Slot* s = supervisor.slot(w.slot);
    w.next_state = s == nullptr ? "removed" : std::string(to_string(s->state));
    if (s != nullptr && s->state == SlotState::kBackoff) {
      w.restart_in_ms = static_cast<int64_t>(std::max(s->next_start_at_ms, now_ms) - now_ms);
    }
    sender_.fire(config::HookEvent::kWorkerExit, worker_exit_payload(source_, w));
  }
  exits_.clear();
}

void HookService::run_finished(const Run& run, const nlohmann::json& detail) {
  sender_.fire(config::HookEvent::kRunFinished,
               run_finished_payload(source_, detail, run.created_ms, run.finished_ms));
}

void HookService::run_quarantined(const nlohmann::json& detail, int64_t now_ms) {
  sender_.fire(config::HookEvent::kRunQuarantined,
               run_quarantined_payload(source_, detail, now_ms));
}

void HookService::watch_journal(const journal::Journal& journal, const std::string& label) {
  const journal::Journal::Health h = journal.health();
  std::optional<config::HookEvent> event = journal_watch_.observe(h);
  if (!event) return;
  const int64_t now = unix_ms_now();
  if (*event == config::HookEvent::kJournalFailed) {
    sender_.fire(*event, journal_failed_payload(source_, label, h, now));
  } else {
    sender_.fire(*event, journal_recovered_payload(source_, label, h,
                                                   journal_watch_.failing_since_ms(), now));
  }
}

}  // namespace corral::master
