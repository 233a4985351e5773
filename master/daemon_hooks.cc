// The master's side of its hooks: which facts become events, and when (hooks/payloads.h says
// what each sends, hooks/sender.h how).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "master/daemon_impl.h"
#include "shared/proc.h"

namespace corral::master {

void Daemon::start_hooks() {
  char host[256];
  size_t size = sizeof host;
  hook_source_.host = uv_os_gethostname(host, &size) == 0 ? std::string(host, size) : "";
  hook_source_.daemon_pid = getpid();
  hooks_.set_hooks(cfg_.hooks);
}

void Daemon::note_worker_exit(int slot, pid_t pid, int restarts) {
  const Slot* s = supervisor_.slot(slot);
  if (s == nullptr || !s->last_exit) return;
  WorkerExit w;
  w.slot = slot;
  w.pid = pid;
  w.exit = *s->last_exit;
  w.restarts = restarts;
  exits_to_report_.push_back(std::move(w));
  kick();
}

void Daemon::fire_worker_exits() {
  if (exits_to_report_.empty()) return;
  const uint64_t now = monotonic_ms();
  for (WorkerExit& w : exits_to_report_) {
    const Slot* s = supervisor_.slot(w.slot);
    w.next_state = s == nullptr ? "removed" : std::string(to_string(s->state));
    if (s != nullptr && s->state == SlotState::kBackoff) {
      w.restart_in_ms = static_cast<int64_t>(std::max(s->next_start_at_ms, now) - now);
    }
    hooks_.fire(config::HookEvent::kWorkerExit, worker_exit_payload(hook_source_, w));
  }
  exits_to_report_.clear();
}

void Daemon::on_run_finished(const Run& run) {
  hooks_.fire(
      config::HookEvent::kRunFinished,
      run_finished_payload(hook_source_, runs_.detail_json(run), run.created_ms, run.finished_ms));
}

void Daemon::watch_journal() {
  if (!journal_) return;
  const journal::Journal::Health h = journal_->health();
  std::optional<config::HookEvent> event = journal_watch_.observe(h);
  if (!event) return;
  const int64_t now = unix_ms_now();
  if (*event == config::HookEvent::kJournalFailed) {
    hooks_.fire(*event, journal_failed_payload(hook_source_, journal_label(), h, now));
  } else {
    hooks_.fire(*event, journal_recovered_payload(hook_source_, journal_label(), h,
                                                  journal_watch_.failing_since_ms(), now));
  }
}

void Daemon::stop_hooks() {
  const uint64_t spent = shutdown_started_ms_ != 0 ? monotonic_ms() - shutdown_started_ms_ : 0;
  hooks_.stop(cfg_.stop_grace_ms > spent ? cfg_.stop_grace_ms - spent : 0);
}

}  // namespace corral::master
