// A one-shot timer due at an absolute time on uv_hrtime()'s clock, to the microsecond: a
// timerfd (CLOCK_MONOTONIC, the clock uv_hrtime() reads) watched by the loop. libuv's own
// timers count whole milliseconds of a clock read once per turn of the loop, so against
// uv_hrtime() they fire up to a millisecond early or late; a load test's iteration starts need
// better (docs/load.md, "Latency, and coordinated omission"). Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>

#include "shared/status.h"
#include "shared/uv/handle.h"

namespace corral::uv {

class ExactTimer {
 public:
  explicit ExactTimer(uv_loop_t* loop) : loop_(loop) {}
  ~ExactTimer() { handle_.close(); }
  ExactTimer(const ExactTimer&) = delete;
  ExactTimer& operator=(const ExactTimer&) = delete;

  // Makes the timerfd and watches it; fails when the process is out of file descriptors,
  // saying so. `cb` runs on the loop each time the timer fires; it may destroy this timer.
  Status open(std::function<void()> cb);
  // Fires once uv_hrtime() / 1000 >= at_us: on the loop's next poll when that time has passed.
  // Replaces the previous time. Does nothing before open().
  void start_at(uint64_t at_us);
  void stop();

 private:
  // Handle<> treats a pointer to this as a pointer to the poll handle, its first member. The
  // descriptor is closed with the memory, after libuv has closed the handle.
  struct Fd {
    uv_poll_t poll;
    int fd = -1;
    ~Fd();
  };
  static void on_readable(uv_poll_t* p, int status, int events);

  uv_loop_t* loop_;
  Handle<Fd> handle_;
  std::function<void()> cb_;
};

}  // namespace corral::uv
