#include "shared/uv/next_turn.h"

#include <cstdlib>

#include "shared/uv/guard.h"

namespace corral::uv {

namespace {

struct Turns {
  uv_loop_t* marked = nullptr;  // the loop this thread's TurnMarker marks
  uint64_t polls = 0;           // its polls so far
  // The current slice: its loop, its turn (polls on the marked loop, else the loop's ms).
  uv_loop_t* loop = nullptr;
  uint64_t turn = 0;
  uint64_t start_ns = 0;
};

Turns& turns() {
  thread_local Turns t;
  return t;
}

}  // namespace

Slice Slice::of_turn(uv_loop_t* loop) {
  Turns& t = turns();
  const uint64_t turn = loop == t.marked ? t.polls : uv_now(loop);
  if (t.loop != loop || t.turn != turn) {
    t.loop = loop;
    t.turn = turn;
    t.start_ns = uv_hrtime();
  }
  return Slice(kNs, t.start_ns);
}

TurnMarker::TurnMarker(uv_loop_t* loop) {
  if (uv_prepare_init(loop, handle_.get()) != 0) std::abort();  // cannot fail on Linux
  handle_.set_live(this);
  uv_prepare_start(handle_.get(), &TurnMarker::on_prepare);
  uv_unref(handle_.base());  // marks turns, keeps no loop alive
  turns() = Turns{.marked = loop};
}

TurnMarker::~TurnMarker() { turns() = Turns{}; }

void TurnMarker::on_prepare(uv_prepare_t* h) {
  if (owner_of<TurnMarker>(h) != nullptr) turns().polls += 1;
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
