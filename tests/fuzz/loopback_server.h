// What the client fuzz targets share: a loopback server on the target's loop that answers
// each connection with the current input, in pieces, then closes; and the loop itself.
#pragma once

#include <uv.h>

#include <memory>
#include <string>
#include <string_view>

#include "tests/fuzz/check.h"

namespace corral::fuzz {

// A listener that answers each connection with the current input, in pieces, then closes.
struct LoopbackServer {
  uv_loop_t* loop;
  uv_tcp_t listener;
  int port = 0;
  std::string_view answer;
  size_t piece = 1;

  explicit LoopbackServer(uv_loop_t* l) : loop(l) {
    uv_tcp_init(loop, &listener);
    listener.data = this;
    sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    FUZZ_CHECK(uv_tcp_bind(&listener, reinterpret_cast<sockaddr*>(&a), 0) == 0);
    FUZZ_CHECK(uv_listen(reinterpret_cast<uv_stream_t*>(&listener), 128, &on_connection) == 0);
    int len = sizeof a;
    uv_tcp_getsockname(&listener, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }

  static void on_connection(uv_stream_t* l, int status) {
    if (status != 0) return;
    auto* self = static_cast<LoopbackServer*>(l->data);
    auto* c = new uv_tcp_t;
    uv_tcp_init(self->loop, c);
    if (uv_accept(l, reinterpret_cast<uv_stream_t*>(c)) != 0) {
      uv_close(reinterpret_cast<uv_handle_t*>(c), [](uv_handle_t* h) { delete h; });
      return;
    }
    // Written in pieces, each its own write: the client sees them arrive one by one.
    for (size_t at = 0; at < self->answer.size(); at += self->piece) {
      std::string_view part = self->answer.substr(at, self->piece);
      auto* w = new uv_write_t;
      w->data = new std::string(part);
      auto* bytes = static_cast<std::string*>(w->data);
      uv_buf_t buf = uv_buf_init(bytes->data(), static_cast<unsigned>(bytes->size()));
      uv_write(w, reinterpret_cast<uv_stream_t*>(c), &buf, 1, [](uv_write_t* req, int) {
        delete static_cast<std::string*>(req->data);
        delete req;
      });
    }
    auto* sd = new uv_shutdown_t;
    uv_shutdown(sd, reinterpret_cast<uv_stream_t*>(c), [](uv_shutdown_t* req, int) {
      uv_close(reinterpret_cast<uv_handle_t*>(req->handle), [](uv_handle_t* h) {
        delete reinterpret_cast<uv_tcp_t*>(h);
      });
      delete req;
    });
  }
};

struct LoopbackFixture {
  uv_loop_t loop;
  std::unique_ptr<LoopbackServer> server;
  LoopbackFixture() {
    uv_loop_init(&loop);
    server = std::make_unique<LoopbackServer>(&loop);
  }
};

// Lives for the whole process, as a worker's loop does.
inline LoopbackFixture& loopback() {
  static auto* f = new LoopbackFixture();
  return *f;
}

}  // namespace corral::fuzz
