// The supervisor's reload: one slot at a time, a new worker starts beside the old one, passes
// a readiness gate and a healthy grace period, and only then replaces it (see slot.h).
#include <algorithm>
#include <csignal>

#include <spdlog/spdlog.h>

#include "config/config.h"
#include "master/supervisor.h"

namespace corral::master {
namespace {

std::string duration_text(uint64_t ms) { return config::format_duration_ms(ms); }

}  // namespace

std::string_view to_string(ReloadStatus::Phase p) {
  switch (p) {
    case ReloadStatus::Phase::kNone:
      return "none";
    case ReloadStatus::Phase::kRunning:
      return "running";
    case ReloadStatus::Phase::kDone:
      return "done";
    case ReloadStatus::Phase::kFailed:
      return "failed";
  }
  return "unknown";
}

std::string Supervisor::reload_refusal() const {
  if (shutting_down_) return "the daemon is stopping";
  if (reload_.phase != ReloadStatus::Phase::kRunning) return "";
  return "reload " + std::to_string(reload_.number) + " is still running (slot " +
         std::to_string(reload_.slot) + ", " + std::to_string(reload_.replaced.size()) + " of " +
         std::to_string(reload_.slots.size()) + " replaced)";
}

bool Supervisor::reload_holds(int index) const {
  if (reload_.phase != ReloadStatus::Phase::kRunning) return false;
  for (const Slot& s : slots_) {
    if (s.successor && s.successor->state == SuccessorState::kPromoted) return true;
  }
  const Slot* s = slot(index);
  if (index == reload_.slot && s != nullptr && s->successor) return true;
  return std::find(reload_.queue.begin(), reload_.queue.end(), index) != reload_.queue.end();
}

bool Supervisor::request_reload(uint64_t now_ms, std::string* why) {
  *why = reload_refusal();
  if (!why->empty()) return false;
  ReloadStatus r;
  r.phase = ReloadStatus::Phase::kRunning;
  r.number = reload_.number + 1;
  r.started_at_ms = now_ms;
  for (int i = 0; i < wanted_; ++i) {
    r.slots.push_back(i);
    r.queue.push_back(i);
  }
  reload_ = std::move(r);
  return true;
}

void Supervisor::on_successor_spawned(int index, pid_t pid, uint64_t now_ms) {
  Slot* s = find(index);
  if (s == nullptr || !s->successor) return;
  s->successor->pid = pid;
  s->successor->started_at_ms = now_ms;
  s->successor->last_heard_ms = now_ms;
}

void Supervisor::on_successor_ready(int index, uint64_t now_ms) {
  Slot* s = find(index);
  if (s == nullptr || !s->successor || s->successor->state != SuccessorState::kStarting) return;
  s->successor->state = SuccessorState::kProbation;
  s->successor->ready_at_ms = now_ms;
  s->successor->last_heard_ms = now_ms;
}

void Supervisor::on_successor_heartbeat(int index, uint64_t now_ms, uint64_t rss) {
  Slot* s = find(index);
  if (s == nullptr || !s->successor) return;
  s->successor->last_heard_ms = now_ms;
  s->successor->rss_bytes = rss;
}

void Supervisor::on_successor_failed(int index, const std::string& what, bool gone,
                                     uint64_t now_ms) {
  Slot* s = find(index);
  if (s == nullptr || !s->successor) return;
  Successor& n = *s->successor;
  if (n.state != SuccessorState::kFailed) {
    std::string why = n.state == SuccessorState::kPromoted
                          ? "its new worker failed after its grace, before it took over: " + what
                          : "its new worker " + what;
    fail_reload(*s, why, now_ms);
  }
  if (gone) s->successor.reset();
}

void Supervisor::fail_reload(Slot& s, const std::string& why, uint64_t now_ms) {
  if (s.successor) s.successor->state = SuccessorState::kFailed;  // reconcile kills it
  if (reload_.phase != ReloadStatus::Phase::kRunning) return;
  reload_.phase = ReloadStatus::Phase::kFailed;
  reload_.slot = s.index;
  reload_.error = why;
  reload_.ended_at_ms = now_ms;
  reload_.queue.clear();
  spdlog::error("reload {}: slot {}: {}; the reload stops, slots not replaced keep their workers",
                reload_.number, s.index, why);
}

void Supervisor::reconcile_successor(Slot& s, uint64_t now_ms, std::vector<Action>& out) {
  Successor& n = *s.successor;
  if (n.state == SuccessorState::kFailed) {
    if (!n.kill_sent) out.push_back({Action::Kind::kSignal, s.index, SIGKILL, 0, true});
    n.kill_sent = true;
    return;  // then waits for its exit
  }
  if (shutting_down_) {
    fail_reload(s, "the daemon is stopping", now_ms);
  } else if (s.index >= wanted_) {
    fail_reload(s, "the slot was scaled away", now_ms);
  } else if (n.state == SuccessorState::kStarting) {
    if (now_ms - n.started_at_ms > settings_.ready_timeout_ms) {
      fail_reload(s, "its new worker was not ready within " + duration_text(settings_.ready_timeout_ms), now_ms);
    }
  } else if (n.state == SuccessorState::kProbation) {
    if (now_ms - n.last_heard_ms > settings_.heartbeat_timeout_ms) {
      fail_reload(s,
                  "its new worker sent no heartbeat for " +
                      duration_text(now_ms - n.last_heard_ms) + " during its grace",
                  now_ms);
    } else if (settings_.memory_hard_bytes != 0 && n.rss_bytes > settings_.memory_hard_bytes) {
      fail_reload(s, "its new worker passed the hard memory limit", now_ms);
    } else if (now_ms - n.ready_at_ms >= settings_.reload_grace_ms) {
      n.state = SuccessorState::kPromoted;
      spdlog::info("reload {}: slot {}: new worker pid {} healthy for {}", reload_.number,
                   s.index, n.pid, duration_text(settings_.reload_grace_ms));
      if ((s.state == SlotState::kReady || s.state == SlotState::kStarting) && !s.kill_reason) {
        spdlog::info("reload {}: slot {}: stopping the old worker pid {}", reload_.number,
                     s.index, s.pid);
        stop(s, now_ms, out);
      }
    }
  }
  if (n.state == SuccessorState::kFailed) {
    reconcile_successor(s, now_ms, out);  // kill it now
  } else if (n.state == SuccessorState::kPromoted && !has_process(s.state)) {
    adopt(s, out);
  }
}

void Supervisor::adopt(Slot& s, std::vector<Action>& out) {
  Successor n = *s.successor;
  s.successor.reset();
  move(s, SlotState::kReady);
  reset_process(s, n.generation);
  s.pid = n.pid;
  s.started_at_ms = n.started_at_ms;
  s.ready_at_ms = n.ready_at_ms;
  s.last_heard_ms = n.last_heard_ms;
  s.rss_bytes = n.rss_bytes;
  s.error.clear();
  if (reload_.phase == ReloadStatus::Phase::kRunning) reload_.replaced.push_back(s.index);
  out.push_back({Action::Kind::kAdopt, s.index});
}

void Supervisor::advance_reload(uint64_t now_ms, std::vector<Action>& out) {
  if (reload_.phase != ReloadStatus::Phase::kRunning) return;
  while (true) {
    if (reload_.slot >= 0) {
      const Slot* s = find(reload_.slot);
      if (s != nullptr && s->successor) return;  // still being replaced
      reload_.slot = -1;
    }
    if (reload_.queue.empty()) {
      reload_.phase = ReloadStatus::Phase::kDone;
      reload_.ended_at_ms = now_ms;
      spdlog::info("reload {}: all {} slots replaced", reload_.number, reload_.replaced.size());
      return;
    }
    Slot* s = find(reload_.queue.front());
    if (s == nullptr || s->index >= wanted_) {
      reload_.queue.pop_front();
      continue;
    }
    // A slot between processes (starting, leaving, stopping) is replaced once it settles.
    if (s->state == SlotState::kStarting || s->state == SlotState::kDraining ||
        s->state == SlotState::kStopping) {
      return;
    }
    reload_.queue.pop_front();
    reload_.slot = s->index;
    Successor n;
    n.generation = ++spawns_;
    n.started_at_ms = now_ms;
    n.last_heard_ms = now_ms;
    s->successor = n;
    spdlog::info("reload {}: slot {}: starting its new worker", reload_.number, s->index);
    out.push_back({Action::Kind::kSpawn, s->index, 0, 0, true});
    return;
  }
}

}  // namespace corral::master
