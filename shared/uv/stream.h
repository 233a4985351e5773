// A libuv stream (pipe or TCP connection) that owns its write buffers.
//
// write() copies nothing: it takes the bytes and keeps them until libuv's write callback, as
// libuv requires. libuv's write queue is unbounded, so callers watch queued_bytes() and apply
// their own backpressure. Read callbacks get the bytes of one read; EOF and errors arrive once
// through on_end with the libuv status (UV_EOF for a clean end). Loop thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "shared/status.h"
#include "shared/uv/handle.h"

namespace corral::uv {

class Stream {
 public:
  using OnData = std::function<void(std::string_view bytes)>;
  using OnEnd = std::function<void(int uv_status)>;

  // A pipe (unix socket, or an inherited fd); `ipc` as for uv_pipe_init.
  static std::unique_ptr<Stream> pipe(uv_loop_t* loop, bool ipc = false);
  static std::unique_ptr<Stream> tcp(uv_loop_t* loop);
  // Accepts a pending connection from a listening `server` stream into a new Stream.
  static Result<std::unique_ptr<Stream>> accept(uv_loop_t* loop, uv_stream_t* server);
  ~Stream() { close(); }

  uv_stream_t* raw() const { return handle_.stream(); }
  Status open_fd(int fd);  // pipes only
  Status start_read(OnData on_data, OnEnd on_end);
  void stop_read();
  // Queues `bytes`. Returns an error only when the stream is already closed or broken;
  // a write that fails later is reported through on_end.
  Status write(std::string bytes);
  size_t queued_bytes() const;
  // Calls `done` once every queued write has been handed to the kernel (uv_shutdown), or
  // failed. `done` is not called if the stream is closed first.
  void shutdown(std::function<void()> done);
  bool is_open() const { return handle_.live(); }
  void close() { handle_.close(); }

 private:
  Stream() = default;
  static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  void end(int status);

  Handle<uv_any_handle> handle_;
  OnData on_data_;
  OnEnd on_end_;
  std::function<void()> on_shutdown_;
  bool ended_ = false;
};

}  // namespace corral::uv
