// A libuv timer with a std::function callback. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>

#include "shared/uv/handle.h"

namespace corral::uv {

class Timer {
 public:
  explicit Timer(uv_loop_t* loop);
  // Fires `cb` after `timeout_ms`, then every `repeat_ms` if non-zero. Restarting replaces the
  // previous schedule and callback. The callback may destroy this Timer.
  void start(uint64_t timeout_ms, uint64_t repeat_ms, std::function<void()> cb);
  void stop();
  // Whether it is set to fire (a one-shot timer that fired is not).
  bool active() const { return handle_.live() && uv_is_active(handle_.base()) != 0; }
  void close() { handle_.close(); }
  // Keeps the loop from waiting on this timer alone (uv_unref).
  void unref();

 private:
  static void on_timer(uv_timer_t* t);
  Handle<uv_timer_t> handle_;
  std::function<void()> cb_;
};

}  // namespace corral::uv
