// When each waiting instance wakes: one libuv timer for all of them, in front of a FIFO and an
// array heap of wake-ups (below). A worker holds tens of thousands of waiting instances; a
// libuv timer each would put every one in libuv's heap, whose nodes live inside the instances,
// so each wake-up and each new wait would walk a path of cold cache lines. Here a wake-up is 24
// bytes in contiguous memory. Internal to worker/engine; loop thread only.
//
// Wake-ups of a second or more are due on a grid of kGrainMs (rounded up: late by less than
// that, never early), so that those due within one grain fire in one turn of the loop. Without
// it, instances whose polls are spread evenly over their interval (a run's start_spread) woke
// the worker 500 times a second for two polls each, and a poll cost 1.5 to 1.8 times the CPU of
// polls due in batches (BENCHMARKS.md, seed-polling, 2026-12-03).
//
// A load test's iteration starts need the opposite: their lateness is added to the latency a
// test reports, so a driver switches its queue to the exact clock (use_exact_clock): times in
// microseconds of uv_hrtime(), a timerfd instead of a libuv timer, and no lateness but the
// loop's own. Wake-ups are still batched, forward: a turn that wakes at W fires every wake-up
// due by W + kEarlyUs, and the next turn wakes no sooner than W + kEarlyUs, so a wake-up comes
// at most kEarlyUs early and the queue wakes at most 500 times a second for wake-ups spread in
// time. One that is due already when the turn ends (scheduled by one that fired: a VU whose
// iteration ended at once, with no pace or past it) fires at the loop's next poll. (Waking for each
// start alone cost a worker 30 to 40 µs per start on this project's virtual machines, where
// every timer reprogramming exits to the hypervisor: at 20,000 starts a second, a core. Waking
// every 2 ms rather than every 1 ms cut a worker's context switches by a third and its CPU per
// held WebSocket message by 8 %: BENCHMARKS.md, held WebSockets.)
//
// Wake-ups are kept in two stores: those scheduled in order of time, or nearly (a load test's VUs
// each wake a pace after their last start, so nearly all of theirs), in a FIFO that costs O(1)
// per wake-up and is read front to back; the others in an array heap. The earliest of the two
// fronts fires first.
//
// A wake-up is never removed: a newer one for the same id replaces it (schedule returns a
// token, and the owner ignores a wake-up whose token is not the latest), and one for an id that
// is gone is ignored by the owner. Both are dropped when their time comes.
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "shared/status.h"
#include "shared/uv/exact_timer.h"
#include "shared/uv/handle.h"

namespace corral::worker {

class WakeQueue {
 public:
  // Called for each wake-up that is due, in order of time, then of scheduling.
  using Fire = std::function<void(uint64_t id, uint64_t token)>;

  WakeQueue(uv_loop_t* loop, Fire fire);
  ~WakeQueue();
  WakeQueue(const WakeQueue&) = delete;
  WakeQueue& operator=(const WakeQueue&) = delete;

  // Wakes `id` once `delay_ms` have passed on the loop's clock (refreshed here, so a wake-up
  // is never early against a clock read before this call); from kCoarseFromMs on, at the next
  // multiple of kGrainMs. Returns the wake-up's token: never 0, and larger than every token
  // returned before.
  static constexpr uint64_t kCoarseFromMs = 1000;
  static constexpr uint64_t kGrainMs = 20;
  uint64_t schedule(uint64_t id, uint64_t delay_ms);
  // From now on, on the exact clock: wake-ups are scheduled with schedule_at. Call before the
  // first schedule. Fails when the process is out of file descriptors.
  Status use_exact_clock();
  // Exact clock: wakes `id` at `at_us` on uv_hrtime()'s clock in microseconds (at most
  // kEarlyUs before; at once when that time has passed). Returns a token as schedule does.
  static constexpr uint64_t kEarlyUs = 2000;
  uint64_t schedule_at(uint64_t id, uint64_t at_us);
  // Exact clock: the longest a turn of the loop fires wake-ups for (checked every 16); those
  // still due wait for the loop's next poll.
  static constexpr uint64_t kTurnBudgetUs = 5000;
  // Wake-ups held, including replaced ones whose time has not come.
  size_t size() const { return in_order_.size() + heap_.size(); }
  // How far from its end a wake-up may go into the FIFO.
  static constexpr size_t kNearEnd = 16;

 private:
  struct Entry {
    uint64_t at;     // the loop's time in ms, or uv_hrtime() in µs on the exact clock
    uint64_t token;  // also the order of scheduling, for wake-ups due at the same time
    uint64_t id;
  };
  // The heap's order, as a type so that the heap's calls inline it.
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.at != b.at ? a.at > b.at : a.token > b.token;
    }
  };
  static void on_timer(uv_timer_t* t);
  void on_exact();
  uint64_t push(uint64_t id, uint64_t at);
  // Into the FIFO when it goes at most kNearEnd places before its end, else into the heap.
  void store(const Entry& e);
  // The earliest wake-up held; nullptr when there is none.
  const Entry* earliest() const;
  // Takes out `first`, which earliest() returned.
  Entry pop(const Entry* first);
  uint64_t now_or_soon() const;
  void run_due();
  void arm(uint64_t min_delay_ms);

  uv_loop_t* loop_;
  Fire fire_;
  uv::Handle<uv_timer_t> timer_;
  std::unique_ptr<uv::ExactTimer> exact_;  // set on the exact clock
  uint64_t woke_us_ = 0;                   // exact clock: when it last fired
  std::deque<Entry> in_order_;             // sorted on (at, token)
  std::vector<Entry> heap_;                // a min-heap on (at, token)
  uint64_t armed_at_ = 0;  // the time (as Entry::at) the timer fires at; 0 when stopped
  uint64_t last_token_ = 0;
};

}  // namespace corral::worker
