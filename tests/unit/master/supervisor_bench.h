// A supervisor driven by a fake clock and fake processes, for the supervisor's unit tests.
#pragma once

#include <vector>

#include "master/supervisor.h"

namespace corral::test {

using master::Action;
using master::ExitReason;
using master::SlotState;
using master::Supervisor;
using master::SupervisorSettings;

// A supervisor with a fake clock and fake processes: spawn actions get pids 100, 101, ...
struct SupervisorBench {
  explicit SupervisorBench(int wanted, SupervisorSettings s = settings())
      : sup(s, wanted, [] { return 0.5; }) {}

  static SupervisorSettings settings() {
    SupervisorSettings s;
    s.restart.jitter = 0;
    return s;
  }

  std::vector<Action> step(uint64_t advance_ms = 0) {
    now += advance_ms;
    auto actions = sup.reconcile(now);
    for (const auto& a : actions) {
      if (a.kind != Action::Kind::kSpawn) continue;
      if (a.successor) {
        sup.on_successor_spawned(a.slot, next_pid++, now);
      } else {
        sup.on_spawned(a.slot, next_pid++, now);
      }
    }
    return actions;
  }
  void ready_all() {
    for (const auto& s : sup.slots()) {
      if (s.state == SlotState::kStarting) sup.on_ready(s.index, now);
    }
  }
  // Every successor that is starting says it is ready.
  void ready_successors() {
    for (const auto& s : sup.slots()) {
      if (s.successor && s.successor->state == master::SuccessorState::kStarting) {
        sup.on_successor_ready(s.index, now);
      }
    }
  }
  void exit(int slot, int64_t code, int sig) { sup.on_exit(slot, code, sig, false, now, now); }
  SlotState state(int slot) { return sup.slot(slot)->state; }
  ExitReason last_reason(int slot) { return sup.slot(slot)->last_exit->reason; }

  Supervisor sup;
  uint64_t now = 1000;
  int next_pid = 100;
};

inline int count(const std::vector<Action>& as, Action::Kind k, int signum = -1) {
  int n = 0;
  for (const auto& a : as) n += (a.kind == k && (signum < 0 || a.signum == signum)) ? 1 : 0;
  return n;
}

}  // namespace corral::test
