// RAII ownership of raw libuv handles.
//
// libuv frees nothing itself: a handle's memory must stay valid until its close callback runs,
// which is one loop iteration after uv_close(). The C++ owner, however, may go away at once.
// Handle<T> splits the two: the owner holds a heap-allocated T; close() (also run by the
// destructor) clears T::data and hands the memory to the close callback, which frees it.
// Callbacks find their owner through T::data and must return at once when it is null.
// close() is safe to call twice and on a handle that was never initialised.
//
// Loop thread only.
#pragma once

#include <uv.h>

#include <utility>

namespace corral::uv {

template <typename T>
class Handle {
 public:
  Handle() : raw_(new T{}) {}
  ~Handle() { close(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : raw_(std::exchange(o.raw_, nullptr)), live_(o.live_) {}

  T* get() const { return raw_; }
  uv_handle_t* base() const { return reinterpret_cast<uv_handle_t*>(raw_); }
  uv_stream_t* stream() const { return reinterpret_cast<uv_stream_t*>(raw_); }

  // Call right after a successful uv_*_init: from then on the memory is freed by uv_close.
  void set_live(void* owner) {
    live_ = true;
    base()->data = owner;
  }
  bool live() const { return raw_ != nullptr && live_; }

  void close() {
    if (raw_ == nullptr) return;
    T* raw = std::exchange(raw_, nullptr);
    reinterpret_cast<uv_handle_t*>(raw)->data = nullptr;
    if (!live_) {
      delete raw;
      return;
    }
    if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(raw))) {
      uv_close(reinterpret_cast<uv_handle_t*>(raw),
               [](uv_handle_t* h) { delete reinterpret_cast<T*>(h); });
    }
  }

 private:
  T* raw_;
  bool live_ = false;
};

// The owner of a handle, or nullptr once it has been closed.
template <typename Owner, typename T>
Owner* owner_of(T* raw) {
  return static_cast<Owner*>(reinterpret_cast<uv_handle_t*>(raw)->data);
}

}  // namespace corral::uv
