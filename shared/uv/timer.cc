#include "shared/uv/timer.h"

#include <cstdlib>

#include "shared/uv/guard.h"

namespace corral::uv {

Timer::Timer(uv_loop_t* loop) {
  if (uv_timer_init(loop, handle_.get()) != 0) std::abort();  // cannot fail on Linux
  handle_.set_live(this);
}

void Timer::start(uint64_t timeout_ms, uint64_t repeat_ms, std::function<void()> cb) {
  if (!handle_.live()) return;
  cb_ = std::move(cb);
  uv_timer_start(handle_.get(), &Timer::on_timer, timeout_ms, repeat_ms);
}

void Timer::stop() {
  if (handle_.live()) uv_timer_stop(handle_.get());
}

void Timer::unref() {
  if (handle_.live()) uv_unref(handle_.base());
}

void Timer::on_timer(uv_timer_t* t) {
  auto* self = owner_of<Timer>(t);
  if (self == nullptr) return;
  guard("timer", [self] {
    auto cb = self->cb_;  // a copy: the callback may destroy or restart this timer
    cb();
  });
}

}  // namespace corral::uv
