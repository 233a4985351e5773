#include "shared/uv/stream.h"

#include <cstdlib>

#include "shared/uv/guard.h"

namespace corral::uv {
namespace {

// libuv calls alloc and then read for one read at a time on a loop thread, and the bytes are
// consumed inside the read callback, so one buffer per thread serves every stream.
thread_local char t_read_buf[64 * 1024];

struct WriteReq {
  uv_write_t req;
  std::string bytes;  // owned until the write callback
};

}  // namespace

std::unique_ptr<Stream> Stream::pipe(uv_loop_t* loop, bool ipc) {
  std::unique_ptr<Stream> s(new Stream());
  if (uv_pipe_init(loop, &s->handle_.get()->pipe, ipc ? 1 : 0) != 0) std::abort();
  s->handle_.set_live(s.get());
  return s;
}

std::unique_ptr<Stream> Stream::tcp(uv_loop_t* loop) {
  std::unique_ptr<Stream> s(new Stream());
  if (uv_tcp_init(loop, &s->handle_.get()->tcp) != 0) std::abort();
  s->handle_.set_live(s.get());
  return s;
}

Result<std::unique_ptr<Stream>> Stream::accept(uv_loop_t* loop, uv_stream_t* server) {
  auto s = server->type == UV_TCP ? tcp(loop) : pipe(loop);
  int rc = uv_accept(server, s->raw());
  if (rc != 0) return io_error(std::string("uv_accept() failed: ") + uv_strerror(rc));
  return s;
}

Status Stream::open_fd(int fd) {
  int rc = uv_pipe_open(&handle_.get()->pipe, fd);
  if (rc != 0) {
    return io_error("uv_pipe_open(" + std::to_string(fd) + ") failed: " + uv_strerror(rc));
  }
  return Status::ok();
}

Status Stream::start_read(OnData on_data, OnEnd on_end) {
  if (!handle_.live()) return io_error("read on a closed stream");
  on_data_ = std::move(on_data);
  on_end_ = std::move(on_end);
  int rc = uv_read_start(raw(), &Stream::on_alloc, &Stream::on_read);
  if (rc != 0) return io_error(std::string("uv_read_start() failed: ") + uv_strerror(rc));
  return Status::ok();
}

void Stream::stop_read() {
  if (handle_.live()) uv_read_stop(raw());
}

Status Stream::write(std::string bytes) {
  if (!handle_.live() || ended_) return io_error("write on a closed stream");
  auto* w = new WriteReq{{}, std::move(bytes)};
  uv_buf_t buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
  w->req.data = this;
  int rc = uv_write(&w->req, raw(), &buf, 1, [](uv_write_t* req, int status) {
    auto* wr = reinterpret_cast<WriteReq*>(req);
    // The handle may have been closed (its owner gone) while the write was queued; libuv then
    // reports UV_ECANCELED and the Stream must not be touched.
    if (status != 0 && status != UV_ECANCELED) {
      if (auto* self = owner_of<Stream>(req->handle)) {
        guard("stream write", [self, status] { self->end(status); });
      }
    }
    delete wr;
  });
  if (rc != 0) {
    delete w;
    return io_error(std::string("uv_write() failed: ") + uv_strerror(rc));
  }
  return Status::ok();
}

size_t Stream::queued_bytes() const {
  return handle_.live() ? uv_stream_get_write_queue_size(raw()) : 0;
}

void Stream::shutdown(std::function<void()> done) {
  if (!handle_.live()) return;
  on_shutdown_ = std::move(done);
  auto* req = new uv_shutdown_t{};
  int rc = uv_shutdown(req, raw(), [](uv_shutdown_t* r, int) {
    auto* self = owner_of<Stream>(r->handle);
    delete r;
    if (self != nullptr && self->on_shutdown_) {
      guard("stream shutdown", [self] {
        auto cb = std::move(self->on_shutdown_);
        cb();
      });
    }
  });
  if (rc != 0) {
    delete req;
    auto cb = std::move(on_shutdown_);
    cb();
  }
}

void Stream::on_alloc(uv_handle_t*, size_t, uv_buf_t* buf) {
  *buf = uv_buf_init(t_read_buf, sizeof(t_read_buf));
}

void Stream::on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* self = owner_of<Stream>(s);
  if (self == nullptr) return;
  guard("stream read", [self, n, buf] {
    if (n > 0) {
      auto cb = self->on_data_;  // a copy: the callback may close or destroy this stream
      cb(std::string_view(buf->base, static_cast<size_t>(n)));
    } else if (n < 0) {
      self->end(static_cast<int>(n));
    }
  });
}

void Stream::end(int status) {
  if (ended_) return;
  ended_ = true;
  stop_read();
  auto cb = on_end_;
  if (cb) cb(status);
}

}  // namespace corral::uv
