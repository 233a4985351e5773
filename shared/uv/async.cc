#include "shared/uv/async.h"

#include <cstdlib>

#include "shared/uv/guard.h"

namespace corral::uv {

Async::Async(uv_loop_t* loop, std::function<void()> cb) : cb_(std::move(cb)) {
  if (uv_async_init(loop, handle_.get(), &Async::on_async) != 0) std::abort();
  handle_.set_live(this);
}

void Async::on_async(uv_async_t* a) {
  auto* self = owner_of<Async>(a);
  if (self == nullptr) return;
  guard("async", [self] {
    auto cb = self->cb_;  // a copy: the callback may destroy this handle
    cb();
  });
}

}  // namespace corral::uv
