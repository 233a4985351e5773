// A libuv signal watcher with a std::function callback. The callback runs on the loop, not in
// the signal handler, so it may do anything; an exception from it is caught and logged (see
// guard.h). Loop thread only.
#pragma once

#include <functional>

#include "shared/status.h"
#include "shared/uv/handle.h"

namespace corral::uv {

class Signal {
 public:
  explicit Signal(uv_loop_t* loop);
  // Calls `cb` with the signal number each time `signum` arrives. Restarting replaces it.
  Status start(int signum, std::function<void(int)> cb);
  void close() { handle_.close(); }

 private:
  static void on_signal(uv_signal_t* s, int signum);
  Handle<uv_signal_t> handle_;
  std::function<void(int)> cb_;
};

}  // namespace corral::uv
