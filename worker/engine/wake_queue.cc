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

Status WakeQueue::use_exact_clock() {
  if (exact_ != nullptr) return Status::ok();
  auto exact = std::make_unique<uv::ExactTimer>(loop_);
  if (Status s = exact->open([this] { on_exact(); }); !s) return s;
  uv_timer_stop(timer_.get());
  exact_ = std::move(exact);
  return Status::ok();
}

uint64_t WakeQueue::schedule(uint64_t id, uint64_t delay_ms) {
  uv_update_time(loop_);
  uint64_t at = uv_now(loop_) + delay_ms;
  if (delay_ms >= kCoarseFromMs) at = (at + kGrainMs - 1) / kGrainMs * kGrainMs;
  return push(id, at);
}

uint64_t WakeQueue::schedule_at(uint64_t id, uint64_t at_us) { return push(id, at_us); }

uint64_t WakeQueue::push(uint64_t id, uint64_t at) {
  store({at, ++last_token_, id});
  if (armed_at_ == 0 || at < armed_at_) arm(0);
  return last_token_;
}

void WakeQueue::store(const Entry& e) {
  auto pos = in_order_.end();
  for (size_t n = 0; n < kNearEnd && pos != in_order_.begin() && Later{}(*std::prev(pos), e); ++n) {
    --pos;
  }
  if (pos == in_order_.begin() || !Later{}(*std::prev(pos), e)) {
    in_order_.insert(pos, e);
    return;
  }
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

const WakeQueue::Entry* WakeQueue::earliest() const {
  if (in_order_.empty()) return heap_.empty() ? nullptr : &heap_.front();
  if (heap_.empty() || !Later{}(in_order_.front(), heap_.front())) return &in_order_.front();
  return &heap_.front();
}

WakeQueue::Entry WakeQueue::pop(const Entry* first) {
  Entry e = *first;
  if (!in_order_.empty() && first == &in_order_.front()) {
    in_order_.pop_front();
    return e;
  }
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  heap_.pop_back();
  return e;
}

void WakeQueue::on_timer(uv_timer_t* t) {
  auto* self = uv::owner_of<WakeQueue>(t);
  if (self == nullptr) return;
  self->armed_at_ = 0;
  self->run_due();
}

void WakeQueue::on_exact() {
  armed_at_ = 0;
  woke_us_ = uv_hrtime() / 1000;
  run_due();
}

// Fires every wake-up due by now_or_soon(). One scheduled meanwhile waits for a later turn of
// the loop even when it is due at once: an owner that always asks to be woken now must not hold
// the loop in this callback. libuv runs a timer again in the same turn when it is restarted with
// no delay past the loop's time, and `schedule` moves that time on, so whenever anything was
// scheduled meanwhile the timer waits at least 1 ms.
//
// On the exact clock a turn fires wake-ups for kTurnBudgetUs at most, and leaves the rest due to
// the loop's next poll, which reads the sockets too. A worker that fell behind (its CPU taken by
// others) would otherwise start everything that came due meanwhile in one turn, each start
// making the next turn longer, while the answers to what it sent waited unread and the
// deadlines of its openings passed.
void WakeQueue::run_due() {
  uint64_t now = now_or_soon();
  uint64_t last = last_token_;  // wake-ups scheduled while these run wait for the next turn
  const uint64_t budget_end_ns = uv_hrtime() + kTurnBudgetUs * 1000;
  std::vector<Entry> later_turn;
  size_t n = 0;
  for (const Entry* first = earliest(); first != nullptr && first->at <= now; first = earliest()) {
    if (exact_ != nullptr && ++n % 16 == 0 && uv_hrtime() >= budget_end_ns) break;
    Entry e = pop(first);
    if (e.token > last) {
      later_turn.push_back(e);
      continue;
    }
    uv::guard("wake-up", [&] { fire_(e.id, e.token); });
  }
  for (const Entry& e : later_turn) store(e);
  arm(last_token_ != last ? 1 : 0);
}

// The time wake-ups are due by now: the loop's, or on the exact clock the time it woke plus
// kEarlyUs.
uint64_t WakeQueue::now_or_soon() const {
  return exact_ != nullptr ? woke_us_ + kEarlyUs : uv_now(loop_);
}

// On the exact clock a timerfd is only looked at by the loop's next poll, so a timer due at
// once never runs twice in one turn: min_delay_ms is for libuv's timer only. A wake-up already
// due (scheduled by one that fired, or left by the turn's budget) fires at the next poll; one
// still to come no sooner than kEarlyUs after the last wake, so that a worker wakes at most 500
// times a second for starts spread in time.
void WakeQueue::arm(uint64_t min_delay_ms) {
  const Entry* first = earliest();
  if (first == nullptr) {
    if (exact_ != nullptr) exact_->stop();
    uv_timer_stop(timer_.get());
    armed_at_ = 0;
    return;
  }
  uint64_t at = first->at;
  if (exact_ != nullptr) {
    const uint64_t soonest = woke_us_ + kEarlyUs;
    exact_->start_at(at <= soonest ? 0 : std::max(at - kEarlyUs, soonest));
    armed_at_ = std::max<uint64_t>(at, 1);
    return;
  }
  uint64_t now = uv_now(loop_);
  uint64_t delay = std::max(at > now ? at - now : 0, min_delay_ms);
  uv_timer_start(timer_.get(), &WakeQueue::on_timer, delay, 0);
  armed_at_ = std::max<uint64_t>(now + delay, 1);
}

}  // namespace corral::worker
