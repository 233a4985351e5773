#include "shared/uv/signal.h"

#include <cstdlib>
#include <string>

#include "shared/uv/guard.h"

namespace corral::uv {

Signal::Signal(uv_loop_t* loop) {
  if (uv_signal_init(loop, handle_.get()) != 0) std::abort();  // cannot fail on Linux
  handle_.set_live(this);
}

Status Signal::start(int signum, std::function<void(int)> cb) {
  if (!handle_.live()) return io_error("signal watcher is closed");
  cb_ = std::move(cb);
  int rc = uv_signal_start(handle_.get(), &Signal::on_signal, signum);
  if (rc != 0) return io_error(std::string("uv_signal_start() failed: ") + uv_strerror(rc));
  return Status::ok();
}

void Signal::on_signal(uv_signal_t* s, int signum) {
  auto* self = owner_of<Signal>(s);
  if (self == nullptr) return;
  guard("signal", [self, signum] {
    auto cb = self->cb_;  // a copy: the callback may destroy this watcher
    cb(signum);
  });
}

}  // namespace corral::uv
