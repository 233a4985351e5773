#include "worker/engine/wake_queue.h"

#include <algorithm>
#include <cstdlib>

#include "shared/uv/guard.h"

namespace corral::worker {

WakeQueue::WakeQueue(uv_loop_t* loop, Fire fire) : loop_(loop), fire_(std::move(fire)) {
  if (uv_timer_init(loop, timer_.get()) != 0) std::abort();  // cannot fail on Linux
  timer_.set_live(this);
}

WakeQueue::~WakeQueue() { timer_.close(); }

uint64_t WakeQueue::schedule(uint64_t id, uint64_t delay_ms) {
  uv_update_time(loop_);
  uint64_t at = uv_now(loop_) + delay_ms;
  if (delay_ms >= kCoarseFromMs) at = (at + kGrainMs - 1) / kGrainMs * kGrainMs;
  heap_.push_back({at, ++last_token_, id});
  std::push_heap(heap_.begin(), heap_.end(), later);
  if (armed_at_ == 0 || heap_.front().at_ms < armed_at_) arm(0);
  return last_token_;
}

void WakeQueue::on_timer(uv_timer_t* t) {
  auto* self = uv::owner_of<WakeQueue>(t);
  if (self == nullptr) return;
  self->armed_at_ = 0;
  self->run_due();
}

// Fires every wake-up due by the loop's time. One scheduled meanwhile waits for a later turn of
// the loop even when it is due at once: an owner that always asks to be woken now must not hold
// the loop in this callback. libuv runs a timer again in the same turn when it is restarted with
// no delay past the loop's time, and `schedule` moves that time on, so whenever anything was
// scheduled meanwhile the timer waits at least 1 ms.
void WakeQueue::run_due() {
  uint64_t now = uv_now(loop_);
  uint64_t last = last_token_;  // wake-ups scheduled while these run wait for the next turn
  std::vector<Entry> later_turn;
  while (!heap_.empty() && heap_.front().at_ms <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Entry e = heap_.back();
    heap_.pop_back();
    if (e.token > last) {
      later_turn.push_back(e);
      continue;
    }
    uv::guard("wake-up", [&] { fire_(e.id, e.token); });
  }
  for (const Entry& e : later_turn) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  arm(last_token_ != last ? 1 : 0);
}

void WakeQueue::arm(uint64_t min_delay_ms) {
  if (heap_.empty()) {
    uv_timer_stop(timer_.get());
    armed_at_ = 0;
    return;
  }
  uint64_t at = heap_.front().at_ms;
  uint64_t now = uv_now(loop_);
  uint64_t delay = std::max(at > now ? at - now : 0, min_delay_ms);
  uv_timer_start(timer_.get(), &WakeQueue::on_timer, delay, 0);
  armed_at_ = std::max<uint64_t>(now + delay, 1);
}

}  // namespace corral::worker
