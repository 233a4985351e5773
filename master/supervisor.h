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
  uint64_t reload_grace_ms = 5000;  // a reload's new worker must stay healthy this long
  uint64_t heartbeat_timeout_ms = 5000;
  // A silent worker whose process still makes system calls is starved, not hung: it is killed
  // once silent this long, or heartbeat_timeout after its calls stop.
  uint64_t starved_timeout_ms = 60000;
  // A worker silent this long (two heartbeats) is watched (watched()).
  uint64_t watch_after_ms = 2000;
  uint64_t kill_grace_ms = 3000;
  uint64_t stop_grace_ms = 10000;
  uint64_t memory_hard_bytes = 0;  // 0 = no hard limit
};

struct Action {
  // kAdopt: the slot's successor is now its process, ready for work.
  enum class Kind { kSpawn, kSignal, kSendStop, kAdopt };
  Kind kind;
  int slot;
  int signum = 0;          // kSignal
  uint64_t grace_ms = 0;   // kSendStop
  bool successor = false;  // kSpawn, kSignal: the slot's successor rather than its process
};

// A reload in progress, or how the last one ended.
struct ReloadStatus {
  enum class Phase { kNone, kRunning, kDone, kFailed };
  Phase phase = Phase::kNone;
  uint64_t number = 0;  // counts reloads since the daemon started
  std::vector<int> slots;     // the slots it replaces, in order
  std::vector<int> replaced;  // those whose new worker took over
  int slot = -1;              // the slot being replaced, or the one that failed
  std::string error;          // why it failed
  uint64_t started_at_ms = 0;
  uint64_t ended_at_ms = 0;
  std::deque<int> queue;  // slots not begun yet
};

std::string_view to_string(ReloadStatus::Phase p);

class Supervisor {
 public:
  // `random` returns values in [0, 1) for backoff jitter.
  Supervisor(SupervisorSettings settings, int wanted, std::function<double()> random);

  // --- facts ---
  void on_spawned(int slot, pid_t pid, uint64_t now_ms);
  void on_spawn_failed(int slot, const std::string& error, uint64_t now_ms, int64_t unix_ms);
  void on_ready(int slot, uint64_t now_ms);
  void on_heartbeat(int slot, uint64_t now_ms, uint64_t rss, double loop_lag_ms, uint64_t active);
  // A frame of any kind from the slot's worker (or, with `successor`, its reload's new one).
  void on_heard(int slot, uint64_t now_ms, bool successor = false);
  // Whether the slot's worker has been silent for watch_after: its pipe and its process are
  // worth a look each tick (unread frames: on_heard; system calls: on_progress).
  bool watched(int slot, uint64_t now_ms) const;
  // The slot's worker has said nothing, but its process made system calls since the last look:
  // its loop runs, starved of CPU (more busy processes than cores), and is not hung.
  void on_progress(int slot, uint64_t now_ms);
  // The master's own loop was held for `ms` until `now_ms` (a stopped process, a suspended
  // machine, a starved one): its workers' frames waited for it, so that time is not counted
  // against their heartbeats. A worker heard during the hold is heard now at the latest.
  void on_master_held(uint64_t ms, uint64_t now_ms);
  void on_rss_sample(int slot, uint64_t rss);
  void on_leaving(int slot, ExitReason reason);
  void on_protocol_error(int slot, const std::string& error);
  // `kernel_oom_kill`: the kernel's OOM killer ended it (cgroup memory.events).
  void on_exit(int slot, int64_t code, int signal, bool kernel_oom_kill, uint64_t now_ms,
               int64_t unix_ms);

  // --- requests ---
  void set_wanted(int n);
  // `corral scale`: `n` workers, kept across reloads (as pm2 keeps its scale) while the config's
  // count stays what it was.
  void scale(int n);
  // The config's worker count, at a reload: it replaces a scaled count only when it differs from
  // the config's count before (the file was edited on purpose). False when a scaled count stays.
  bool set_config_wanted(int n);
  // The count scale() set and the config has not replaced since.
  std::optional<int> scaled() const { return scaled_; }
  // Restarts one slot, or every slot when `slot` is empty. False for an unknown slot.
  bool request_restart(std::optional<int> slot);
  // Replaces the workers one slot at a time: each slot's new worker starts beside the old one,
  // must be ready within ready_timeout and stay healthy for reload_grace, and only then is the
  // old one stopped. The first new worker that fails ends the reload; the slots not replaced
  // keep their workers. False (with why) while a reload runs or the daemon is stopping.
  bool request_reload(uint64_t now_ms, std::string* why);
  // Why a reload cannot start now, or "".
  std::string reload_refusal() const;
  // Facts about a slot's successor (its reload's new worker).
  void on_successor_spawned(int slot, pid_t pid, uint64_t now_ms);
  void on_successor_ready(int slot, uint64_t now_ms);
  void on_successor_heartbeat(int slot, uint64_t now_ms, uint64_t rss);
  // It exited or could not be spawned (`gone`), or broke the protocol or is leaving: the
  // reload fails with `what`, unless it already had.
  void on_successor_failed(int slot, const std::string& what, bool gone, uint64_t now_ms);
  void begin_shutdown();
  void update_settings(const SupervisorSettings& s) { settings_ = s; }

  // --- decision ---
  std::vector<Action> reconcile(uint64_t now_ms);
  // When the earliest slot waiting out its restart backoff is due to start: reconcile() then,
  // not at the next tick, starts it on time. 0 when none waits.
  uint64_t next_start_due_ms() const;

  // --- views ---
  const std::vector<Slot>& slots() const { return slots_; }
  const Slot* slot(int index) const;
  int wanted() const { return wanted_; }
  int ready_count() const;
  bool shutting_down() const { return shutting_down_; }
  // True once shutdown was requested and no worker process is left.
  bool finished() const;
  const ReloadStatus& reload() const { return reload_; }
  // Whether a running reload keeps new work off `slot`, so that it moves each instance at most
  // once: the slot's old worker is still to be replaced (or is being replaced); or any slot's
  // old worker is stopping, whose instances wait for its new worker, which takes over as soon
  // as the old one is gone.
  bool reload_holds(int slot) const;
  const SupervisorSettings& settings() const { return settings_; }

 private:
  Slot* find(int index);
  void move(Slot& s, SlotState to);
  void kill(Slot& s, ExitReason why, int signum, uint64_t now_ms, std::vector<Action>& out);
  void stop(Slot& s, uint64_t now_ms, std::vector<Action>& out);
  void reconcile_running(Slot& s, uint64_t now_ms, std::vector<Action>& out);
  void reconcile_idle(Slot& s, uint64_t now_ms, std::vector<Action>& out);
  bool hung(const Slot& s, uint64_t now_ms) const;
  void advance_reload(uint64_t now_ms, std::vector<Action>& out);
  void reconcile_successor(Slot& s, uint64_t now_ms, std::vector<Action>& out);
  void fail_reload(Slot& s, const std::string& why, uint64_t now_ms);
  void adopt(Slot& s, std::vector<Action>& out);
  // Clears what the slot knew about its last process, for a new one with `generation`.
  static void reset_process(Slot& s, uint64_t generation);

  SupervisorSettings settings_;
  int wanted_;
  int config_wanted_;          // the config's count, as last applied
  std::optional<int> scaled_;  // see scaled()
  std::function<double()> random_;
  std::vector<Slot> slots_;
  ReloadStatus reload_;
  uint64_t spawns_ = 0;  // the generation of the latest spawn
  bool shutting_down_ = false;
};

}  // namespace corral::master
