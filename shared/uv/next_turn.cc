#include "shared/uv/next_turn.h"

#include <cstdlib>

#include "shared/uv/guard.h"

namespace corral::uv {

Slice Slice::of_turn(uv_loop_t* loop) {
  struct Turn {
    uv_loop_t* loop = nullptr;
    uint64_t ms = 0;
    uint64_t start_ns = 0;
  };
  thread_local Turn turn;
  const uint64_t now = uv_now(loop);
  if (turn.loop != loop || turn.ms != now) turn = {loop, now, uv_hrtime()};
  return Slice(kNs, turn.start_ns);
}

NextTurn::NextTurn(uv_loop_t* loop) {
  if (uv_idle_init(loop, handle_.get()) != 0) std::abort();  // cannot fail on Linux
  handle_.set_live(this);
}

void NextTurn::schedule(std::function<void()> cb) {
  if (!handle_.live()) return;
  cb_ = std::move(cb);
  uv_idle_start(handle_.get(), &NextTurn::on_idle);
}

void NextTurn::cancel() {
  if (handle_.live()) uv_idle_stop(handle_.get());
}

bool NextTurn::scheduled() const {
  return handle_.live() && uv_is_active(handle_.base());
}

void NextTurn::on_idle(uv_idle_t* h) {
  auto* self = owner_of<NextTurn>(h);
  if (self == nullptr) return;
  uv_idle_stop(h);
  guard("next turn", [self] {
    auto cb = self->cb_;  // a copy: the callback may destroy or reschedule this NextTurn
    cb();
  });
}

}  // namespace corral::uv
