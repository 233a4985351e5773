// The supervisor: the slot table and the one place that decides what happens to workers.
//
// Everything that happens (a spawn, a message, an exit, a signal, an API request) is recorded
// as a fact through the on_* and request_* methods, which never act. reconcile() then compares
// what is wanted with what is, updates states, and returns the actions to carry out (spawn,
// signal, send stop). The caller executes them. Time is always passed in, so tests drive the
// whole policy with a fake clock and no processes. Loop thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "master/slot.h"

namespace corral::master {

struct SupervisorSettings {
  RestartPolicy restart;
  uint64_t ready_timeout_ms = 10000;
  uint64_t heartbeat_timeout_ms = 5000;
  uint64_t kill_grace_ms = 3000;
  uint64_t stop_grace_ms = 10000;
  uint64_t memory_hard_bytes = 0;  // 0 = no hard limit
};

struct Action {
  enum class Kind { kSpawn, kSignal, kSendStop };
  Kind kind;
  int slot;
  int signum = 0;         // kSignal
  uint64_t grace_ms = 0;  // kSendStop
};

class Supervisor {
 public:
  // `random` returns values in [0, 1) for backoff jitter.
  Supervisor(SupervisorSettings settings, int wanted, std::function<double()> random);

  // --- facts ---
  void on_spawned(int slot, pid_t pid, uint64_t now_ms);
  void on_spawn_failed(int slot, const std::string& error, uint64_t now_ms, int64_t unix_ms);
  void on_ready(int slot, uint64_t now_ms);
  void on_heartbeat(int slot, uint64_t now_ms, uint64_t rss, double loop_lag_ms, uint64_t active);
  void on_rss_sample(int slot, uint64_t rss);
  void on_leaving(int slot, ExitReason reason);
  void on_protocol_error(int slot, const std::string& error);
  // `kernel_oom_kill`: the kernel's OOM killer ended it (cgroup memory.events).
  void on_exit(int slot, int64_t code, int signal, bool kernel_oom_kill, uint64_t now_ms,
               int64_t unix_ms);

  // --- requests ---
  void set_wanted(int n);
  // Restarts one slot, or every slot when `slot` is empty. False for an unknown slot.
  bool request_restart(std::optional<int> slot);
  // Replaces ready workers one at a time: the next is stopped only once all others are ready.
  void request_reload();
  void begin_shutdown();
  void update_settings(const SupervisorSettings& s) { settings_ = s; }

  // --- decision ---
  std::vector<Action> reconcile(uint64_t now_ms);

  // --- views ---
  const std::vector<Slot>& slots() const { return slots_; }
  const Slot* slot(int index) const;
  int wanted() const { return wanted_; }
  int ready_count() const;
  bool shutting_down() const { return shutting_down_; }
  // True once shutdown was requested and no worker process is left.
  bool finished() const;
  // Reload requests not yet carried out.
  size_t reload_pending() const { return reload_queue_.size(); }
  const SupervisorSettings& settings() const { return settings_; }

 private:
  Slot* find(int index);
  void move(Slot& s, SlotState to);
  void kill(Slot& s, ExitReason why, int signum, uint64_t now_ms, std::vector<Action>& out);
  void stop(Slot& s, uint64_t now_ms, std::vector<Action>& out);
  void reconcile_running(Slot& s, uint64_t now_ms, std::vector<Action>& out);
  void reconcile_idle(Slot& s, uint64_t now_ms, std::vector<Action>& out);
  void advance_reload(uint64_t now_ms, std::vector<Action>& out);

  struct ReloadStep {
    int slot;
    uint64_t from_generation = 0;  // 0 until this slot's replacement has begun
  };

  SupervisorSettings settings_;
  int wanted_;
  std::function<double()> random_;
  std::vector<Slot> slots_;
  std::deque<ReloadStep> reload_queue_;
  bool shutting_down_ = false;
};

}  // namespace corral::master
