// Placing instances on workers: each goes to the least-loaded ready worker that is under the
// per-worker concurrency limit; the rest wait in the master. Dispatch is incremental: pump()
// places instances for one slice of time per call, so a submission of 100,000 instances never
// holds the loop for long.
//
// Fair share: when instances of several runs wait, the room goes first to the run with the
// fewest instances running per unit of its priority (the older run on a tie), so a small run
// submitted behind a large one that fills the workers starts as soon as any instance ends, not
// when the large one has been placed whole, and a run of priority 3 beside one of priority 1
// gets three quarters of the room. Nothing running is moved to make room.
//
// Rebalancing: a worker that returns after a restart, or is added by a scale-up, starts empty
// while the others hold everything. rebalance() asks a worker holding clearly more than its
// share to `release` the excess; it hands back waiting instances by checkpoint (never one
// with a request in flight), and pump() places them on the emptier workers, where they go on
// with the same step, attempt counts and poll cadence. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "master/memory_model.h"
#include "master/runs.h"
#include "shared/ipc/codec.h"
#include "shared/ipc/protocol.h"
#include "shared/uv/next_turn.h"

namespace corral::master {

class Dispatcher {
 public:
  // Sends a frame to a worker; false when it cannot take it (pipe gone or backed up).
  using Send = std::function<bool(int slot, ipc::MessageType type, const ipc::Payload& payload)>;

  Dispatcher(Runs& runs, Send send, uint32_t per_worker_limit, uint32_t chunk = 500)
      : runs_(runs), send_(std::move(send)), limit_(per_worker_limit), chunk_(chunk) {}

  // Called before a run is first defined on a worker: what the worker must know first (its
  // shares of the run's per-target limits) goes out then.
  void set_before_define(std::function<void(const Run&)> fn) { before_define_ = std::move(fn); }

  // Slots that take no new work for now, though their worker is ready (a reload is about to
  // replace it: supervisor.h's reload_holds). Placing goes on when the caller pumps again.
  void set_holds(std::function<bool(int slot)> fn) { holds_ = std::move(fn); }

  // A worker that said ready may take work; a worker that is stopping, draining or gone may not.
  void worker_ready(int slot);
  void worker_gone(int slot);
  // One of `slot`'s instances ended.
  void instance_done(int slot);
  // The run's instances running on workers are to be stopped there (a cancel message, which
  // also makes the workers forget the run): none counts as load any more, and the run is
  // defined again before its next placement.
  void forget_run(const Run& run);
  // Places up to `budget` instances, stopping early (after one chunk at least) when `slice`, if
  // given, is over. Returns true when more could be placed right away.
  bool pump(size_t budget, const uv::Slice* slice = nullptr);
  // Asks the workers holding clearly more than their share (more than the mean by a tenth, and
  // by at least a few instances) for kOverForMs to release their excess, at most kReleaseChunk
  // at a time and one request per worker in flight, until they hold their share. Does nothing
  // while instances wait in the queue: placing them evens the loads out first.
  void rebalance(uint64_t now_ms);
  // `slot` answered a release, handing back `n` instances (now queued again).
  void released(int slot, size_t n, uint64_t now_ms);
  uint64_t moved() const { return moved_; }  // instances released by rebalancing, in total

  // How long a worker must hold more than its share before it is asked: the loads of a run
  // whose instances end together differ for a moment, and moving those would be for nothing.
  static constexpr uint64_t kOverForMs = 1000;
  // Per release: small enough that handling the hand-back is a short turn of the loop.
  static constexpr uint32_t kReleaseChunk = 500;
  // After a release that found fewer waiting instances than asked, the worker is left alone
  // this long: its instances are in flight, and asking again at once would find the same.
  static constexpr uint64_t kReleasePauseMs = 1000;

  uint32_t load(int slot) const;
  uint64_t held() const;    // instances on the ready workers, all together
  size_t capacity() const;  // instances the ready workers could still take
  // The most instances `slot` may hold: worker_instances, and what fits in its memory.
  uint64_t cap(int slot) const;
  // Why queued instances are not placed now. `kind` is "" when a worker has room, else
  // "no_worker", "reload", "worker_instances" or "memory"; `why` says it for a user.
  struct Blocked {
    std::string kind;
    std::string why;
  };
  Blocked blocked() const;
  // Heartbeats feed it; it decides how many instances fit in a worker (memory_model.h).
  MemoryModel& memory() { return memory_; }
  const MemoryModel& memory() const { return memory_; }

 private:
  struct Worker {
    uint32_t load = 0;
    std::set<std::string> defined;  // runs this worker process knows
    uint32_t releasing = 0;         // instances asked for by the release in flight; 0: none
    uint64_t next_release_ms = 0;   // no release before this
    uint64_t over_since_ms = 0;     // holding more than its share since; 0: it does not
  };
  // Instances of two runs placed in turn go at least this many at a time.
  static constexpr size_t kFairQuantum = 100;
  int least_loaded() const;  // with room; -1 when none has
  // The run whose instances go next (fair share, above), nullptr when none waits;
  // `runner_up`: the level (running per unit of priority) of the next run after it, -1 when
  // none.
  Run* fairest(double& runner_up) const;
  uint64_t room(int slot) const;
  // Places one chunk of `run` on `slot`; requeued instances (each with a checkpoint to send)
  // stop early when `slice` is over.
  bool place(Run& run, int slot, Worker& w, size_t budget, size_t& placed,
             const uv::Slice* slice = nullptr);

  Runs& runs_;
  Send send_;
  std::function<void(const Run&)> before_define_;
  std::function<bool(int slot)> holds_;
  uint32_t limit_;  // worker_instances; 0: only memory limits it
  uint32_t chunk_;
  MemoryModel memory_;
  std::map<int, Worker> workers_;
  uint64_t moved_ = 0;
};

}  // namespace corral::master
