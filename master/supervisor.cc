#include "master/supervisor.h"

#include <csignal>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace corral::master {

Supervisor::Supervisor(SupervisorSettings settings, int wanted, std::function<double()> random)
    : settings_(settings), wanted_(wanted), config_wanted_(wanted), random_(std::move(random)) {}

Slot* Supervisor::find(int index) {
  if (index < 0 || index >= static_cast<int>(slots_.size())) return nullptr;
  return &slots_[static_cast<size_t>(index)];
}

const Slot* Supervisor::slot(int index) const { return const_cast<Supervisor*>(this)->find(index); }

int Supervisor::ready_count() const {
  int n = 0;
  for (const auto& s : slots_) n += s.state == SlotState::kReady ? 1 : 0;
  return n;
}

bool Supervisor::finished() const {
  if (!shutting_down_) return false;
  for (const auto& s : slots_) {
    if (has_process(s.state) || s.successor) return false;
  }
  return true;
}

void Supervisor::move(Slot& s, SlotState to) {
  if (s.state == to) return;
  if (!can_transition(s.state, to)) {
    spdlog::critical("slot {}: illegal transition {} -> {}", s.index, to_string(s.state),
                     to_string(to));
    std::abort();
  }
  s.state = to;
}

// --- facts ---

void Supervisor::on_spawned(int index, pid_t pid, uint64_t now_ms) {
  Slot* s = find(index);
  if (s == nullptr || s->state != SlotState::kStarting) return;
  s->pid = pid;
  s->started_at_ms = now_ms;
  s->last_heard_ms = now_ms;
}

void Supervisor::on_spawn_failed(int index, const std::string& error, uint64_t now_ms,
                                 int64_t unix_ms) {
  Slot* s = find(index);
  if (s == nullptr || s->state != SlotState::kStarting) return;
  ExitInfo e;
  e.reason = ExitReason::kSpawnFailed;
  e.at_unix_ms = unix_ms;
  e.detail = error;
  s->last_exit = e;
  s->pid = 0;
  s->exited_at_ms = now_ms;
  s->ready_for_ms = 0;
  move(*s, SlotState::kExited);
}

void Supervisor::on_ready(int index, uint64_t now_ms) {
  Slot* s = find(index);
  if (s == nullptr || s->state != SlotState::kStarting) return;
  move(*s, SlotState::kReady);
  s->ready_at_ms = now_ms;
  s->last_heard_ms = now_ms;
  s->error.clear();
}

void Supervisor::on_heartbeat(int index, uint64_t now_ms, uint64_t rss, double loop_lag_ms,
                              uint64_t active) {
  Slot* s = find(index);
  if (s == nullptr || !has_process(s->state)) return;
  s->last_heard_ms = now_ms;
  s->rss_bytes = rss;
  s->loop_lag_ms = loop_lag_ms;
  s->active = active;
}

void Supervisor::on_heard(int index, uint64_t now_ms, bool successor) {
  Slot* s = find(index);
  if (s == nullptr) return;
  if (successor && s->successor) s->successor->last_heard_ms = now_ms;
  if (!successor && has_process(s->state)) s->last_heard_ms = now_ms;
}

bool Supervisor::watched(int index, uint64_t now_ms) const {
  const Slot* s = slot(index);
  // As hung() judges: a starting worker is not judged by its silence (ready_timeout is its).
  return s != nullptr && has_process(s->state) && s->state != SlotState::kStarting &&
         now_ms >= s->last_heard_ms + settings_.watch_after_ms;
}

void Supervisor::on_progress(int index, uint64_t now_ms) {
  Slot* s = find(index);
  if (s != nullptr && has_process(s->state)) s->last_progress_ms = now_ms;
}

void Supervisor::on_master_held(uint64_t ms, uint64_t now_ms) {
  // Never past now: the silence would be negative, and as an unsigned count of milliseconds,
  // endless (a worker heard during the hold was killed as hung at once).
  auto shift = [&](uint64_t& heard) { heard = std::min(heard + ms, now_ms); };
  for (Slot& s : slots_) {
    shift(s.last_heard_ms);
    if (s.successor) shift(s.successor->last_heard_ms);
  }
}

void Supervisor::on_rss_sample(int index, uint64_t rss) {
  Slot* s = find(index);
  if (s != nullptr && has_process(s->state) && rss > 0) s->rss_bytes = rss;
}

void Supervisor::on_leaving(int index, ExitReason reason) {
  Slot* s = find(index);
  if (s == nullptr || !has_process(s->state)) return;
  s->left_reason = reason;
  if (s->state == SlotState::kStarting || s->state == SlotState::kReady) {
    move(*s, SlotState::kDraining);
  }
}

void Supervisor::on_protocol_error(int index, const std::string& error) {
  Slot* s = find(index);
  if (s == nullptr || !has_process(s->state) || !s->protocol_error.empty()) return;
  s->protocol_error = error;
}

void Supervisor::on_exit(int index, int64_t code, int signal, bool kernel_oom_kill, uint64_t now_ms,
                         int64_t unix_ms) {
  Slot* s = find(index);
  if (s == nullptr || !has_process(s->state)) return;
  ExitInfo e =
      classify_exit(code, signal, s->kill_reason, s->left_reason, kernel_oom_kill, unix_ms);
  if (e.reason == ExitReason::kProtocolError) e.detail = s->protocol_error;
  s->last_exit = e;
  s->exited_at_ms = now_ms;
  s->ready_for_ms = s->ready_at_ms != 0 ? now_ms - s->ready_at_ms : 0;
  s->pid = 0;
  s->rss_bytes = 0;
  s->active = 0;
  move(*s, SlotState::kExited);
}

// --- requests ---

void Supervisor::set_wanted(int n) { wanted_ = n < 0 ? 0 : n; }

void Supervisor::scale(int n) {
  set_wanted(n);
  scaled_ = wanted_;
}

bool Supervisor::set_config_wanted(int n) {
  const bool changed = n != config_wanted_;
  config_wanted_ = n;
  if (scaled_ && !changed) return false;
  scaled_.reset();
  set_wanted(n);
  return true;
}

bool Supervisor::request_restart(std::optional<int> index) {
  if (index) {
    Slot* s = find(*index);
    if (s == nullptr || s->index >= wanted_) return false;
    s->restart_requested = true;
    return true;
  }
  for (auto& s : slots_) s.restart_requested = true;
  return true;
}

void Supervisor::begin_shutdown() { shutting_down_ = true; }

// --- decision ---

void Supervisor::kill(Slot& s, ExitReason why, int signum, uint64_t now_ms,
                      std::vector<Action>& out) {
  s.kill_reason = why;
  s.kill_deadline_ms = now_ms + settings_.kill_grace_ms;
  s.sigkill_sent = signum == SIGKILL;
  move(s, SlotState::kStopping);
  out.push_back({Action::Kind::kSignal, s.index, signum, 0});
}

void Supervisor::stop(Slot& s, uint64_t now_ms, std::vector<Action>& out) {
  s.kill_reason = ExitReason::kStopped;
  s.kill_deadline_ms = now_ms + settings_.stop_grace_ms;
  move(s, SlotState::kStopping);
  out.push_back({Action::Kind::kSendStop, s.index, 0, settings_.stop_grace_ms});
}

void Supervisor::reconcile_running(Slot& s, uint64_t now_ms, std::vector<Action>& out) {
  if (s.kill_reason) {
    if (!s.sigkill_sent && now_ms >= s.kill_deadline_ms) {
      s.sigkill_sent = true;
      out.push_back({Action::Kind::kSignal, s.index, SIGKILL, 0});
    }
    return;
  }
  if (shutting_down_ || s.index >= wanted_ || s.restart_requested) {
    stop(s, now_ms, out);
    return;
  }
  if (s.state == SlotState::kDraining) {
    // The worker said it is leaving (soft memory limit): give it kill_grace to do so, and do
    // not count its memory against the hard limit meanwhile.
    if (s.drain_deadline_ms == 0) s.drain_deadline_ms = now_ms + settings_.kill_grace_ms;
    if (now_ms >= s.drain_deadline_ms) {
      kill(s, s.left_reason.value_or(ExitReason::kCrash), SIGKILL, now_ms, out);
    }
    return;
  }
  if (!s.protocol_error.empty()) {
    kill(s, ExitReason::kProtocolError, SIGKILL, now_ms, out);
  } else if (settings_.memory_hard_bytes != 0 && s.rss_bytes > settings_.memory_hard_bytes) {
    kill(s, ExitReason::kMemoryHard, SIGKILL, now_ms, out);
  } else if (s.state == SlotState::kStarting &&
             now_ms - s.started_at_ms > settings_.ready_timeout_ms) {
    kill(s, ExitReason::kNotReady, SIGKILL, now_ms, out);
  } else if (s.state != SlotState::kStarting && hung(s, now_ms)) {
    // A hung loop cannot act on a signal it could catch, and a stopped process acts on none:
    // SIGKILL at once, so that the slot is free for a replacement now.
    spdlog::warn(
        "slot {}: nothing heard for {} ms (its last heartbeat said its loop was {:.0f} "
        "ms late): hung",
        s.index, now_ms - s.last_heard_ms, s.loop_lag_ms);
    kill(s, ExitReason::kHung, SIGKILL, now_ms, out);
  }
}

// Silent for heartbeat_timeout, and as long without system calls seen; or silent for
// starved_timeout whatever its process does.
bool Supervisor::hung(const Slot& s, uint64_t now_ms) const {
  if (now_ms <= s.last_heard_ms) return false;
  const uint64_t silent = now_ms - s.last_heard_ms;
  if (silent <= settings_.heartbeat_timeout_ms) return false;
  if (silent > settings_.starved_timeout_ms) return true;
  const uint64_t busy = std::max(s.last_heard_ms, s.last_progress_ms);
  return now_ms > busy && now_ms - busy > settings_.heartbeat_timeout_ms;
}

void Supervisor::reconcile_idle(Slot& s, uint64_t now_ms, std::vector<Action>& out) {
  if (shutting_down_ || s.index >= wanted_) return;
  if (s.state == SlotState::kExited) {
    RestartDecision d = decide_restart(settings_.restart, s.history, *s.last_exit, s.exited_at_ms,
                                       s.ready_for_ms, random_());
    if (s.restart_requested) d.delay_ms = 0;
    s.next_start_at_ms = s.exited_at_ms + d.delay_ms;
    if (d.errored) {
      s.error = d.why;
      move(s, SlotState::kErrored);
      spdlog::error("slot {}: errored: {}", s.index, s.error);
    } else {
      move(s, SlotState::kBackoff);
    }
  }
  if (s.restart_requested) s.next_start_at_ms = now_ms;  // a user asked: no more waiting
  if (now_ms < s.next_start_at_ms) return;
  move(s, SlotState::kStarting);
  reset_process(s, ++spawns_);
  s.started_at_ms = now_ms;
  s.last_heard_ms = now_ms;
  out.push_back({Action::Kind::kSpawn, s.index});
}

uint64_t Supervisor::next_start_due_ms() const {
  if (shutting_down_) return 0;
  uint64_t due = 0;
  for (const Slot& s : slots_) {
    if (s.state != SlotState::kBackoff || s.index >= wanted_) continue;
    if (due == 0 || s.next_start_at_ms < due) due = s.next_start_at_ms;
  }
  return due;
}

void Supervisor::reset_process(Slot& s, uint64_t generation) {
  s.generation = generation;
  s.starts += 1;
  s.restarts = s.starts - 1;
  s.pid = 0;
  s.ready_at_ms = 0;
  s.rss_bytes = 0;
  s.loop_lag_ms = 0;
  s.active = 0;
  s.kill_reason.reset();
  s.kill_deadline_ms = 0;
  s.sigkill_sent = false;
  s.left_reason.reset();
  s.drain_deadline_ms = 0;
  s.protocol_error.clear();
  s.restart_requested = false;
}

std::vector<Action> Supervisor::reconcile(uint64_t now_ms) {
  std::vector<Action> out;
  while (!shutting_down_ && static_cast<int>(slots_.size()) < wanted_) {
    Slot s;
    s.index = static_cast<int>(slots_.size());
    slots_.push_back(s);
  }
  for (auto& s : slots_) {
    if (s.successor) reconcile_successor(s, now_ms, out);
    if (has_process(s.state)) {
      reconcile_running(s, now_ms, out);
    } else if (!s.successor) {  // a slot waiting for its successor is not started again
      reconcile_idle(s, now_ms, out);
    }
  }
  advance_reload(now_ms, out);
  while (!slots_.empty() && slots_.back().index >= wanted_ && !has_process(slots_.back().state) &&
         !slots_.back().successor) {
    slots_.pop_back();
  }
  return out;
}

}  // namespace corral::master
