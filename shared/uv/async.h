// A libuv async handle with a std::function callback: another thread calls send() to have the
// callback run on the loop (several sends may be coalesced into one call). An exception from
// the callback is caught and logged (see guard.h).
//
// Construct, start and close on the loop thread; send() from any thread while the handle is
// open (the owner must stop other threads from sending before it closes the handle).
#pragma once

#include <functional>

#include "shared/uv/handle.h"

namespace corral::uv {

class Async {
 public:
  Async(uv_loop_t* loop, std::function<void()> cb);
  // Any thread.
  void send() { uv_async_send(handle_.get()); }
  // Keeps the loop from waiting on this handle alone (uv_unref).
  void unref() { uv_unref(handle_.base()); }
  void close() { handle_.close(); }

 private:
  static void on_async(uv_async_t* a);
  Handle<uv_async_t> handle_;
  std::function<void()> cb_;
};

}  // namespace corral::uv
