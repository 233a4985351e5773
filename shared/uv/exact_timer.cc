#include "shared/uv/exact_timer.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shared/uv/guard.h"

namespace corral::uv {

ExactTimer::Fd::~Fd() {
  if (fd >= 0) ::close(fd);
}

Status ExactTimer::open(std::function<void()> cb) {
  if (handle_.live()) return Status::ok();
  Fd* raw = handle_.get();
  if (raw->fd < 0) raw->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (raw->fd < 0) {
    return io_error(std::string("cannot make a timer (timerfd): ") + std::strerror(errno));
  }
  if (int rc = uv_poll_init(loop_, &raw->poll, raw->fd); rc != 0) {
    return io_error(std::string("cannot watch a timer: ") + uv_strerror(rc));
  }
  handle_.set_live(this);
  cb_ = std::move(cb);
  uv_poll_start(&raw->poll, UV_READABLE, &ExactTimer::on_readable);
  return Status::ok();
}

void ExactTimer::start_at(uint64_t at_us) {
  if (!handle_.live()) return;
  itimerspec when{};
  when.it_value.tv_sec = static_cast<time_t>(at_us / 1'000'000);
  when.it_value.tv_nsec = static_cast<long>(at_us % 1'000'000 * 1000);
  if (at_us == 0) when.it_value.tv_nsec = 1;  // all zero would disarm it
  timerfd_settime(handle_.get()->fd, TFD_TIMER_ABSTIME, &when, nullptr);
}

void ExactTimer::stop() {
  if (!handle_.live()) return;
  itimerspec none{};
  timerfd_settime(handle_.get()->fd, 0, &none, nullptr);
}

void ExactTimer::on_readable(uv_poll_t* p, int, int) {
  auto* self = owner_of<ExactTimer>(p);
  if (self == nullptr) return;
  uint64_t expirations;
  if (::read(self->handle_.get()->fd, &expirations, sizeof expirations) < 0) return;  // not due
  guard("exact timer", [self] {
    auto cb = self->cb_;  // a copy: the callback may destroy this timer
    cb();
  });
}

}  // namespace corral::uv
