// What the client fuzz targets share: a loopback server on the target's loop that answers
// each connection with the current input, in pieces, then closes; and the loop itself.
#pragma once

#include <uv.h>

#include <memory>
#include <string>
#include <string_view>

#include "tests/fuzz/check.h"
#include "worker/http/curl_client.h"
#include "worker/http/lean_client.h"

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
      uv_close(reinterpret_cast<uv_handle_t*>(req->handle),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
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

// One request to the loopback server (GET or HEAD, `http_version`) by a fresh lean client whose
// limits the input's mode bits choose (bit 1: a 64-byte max_response, bit 2: a 32-byte memory
// budget), and the checks every answer must pass: the callback runs exactly once; a response
// has a status of 100 or more, no error, a body within max_response (none for HEAD); a failure
// has an error; the client ends with nothing in flight and the whole budget given back.
inline void fetch_and_check(LoopbackFixture& f, bool head, uint8_t mode,
                            http::HttpVersion version = http::HttpVersion::kAuto) {
  worker::ClientOptions opts;
  opts.max_body_bytes = (mode & 2) ? 64 : 1 << 16;
  worker::BodyBudget budget{(mode & 4) ? 32u : 1u << 20, 0};
  {
    worker::CurlClient curl(&f.loop, opts, &budget);
    worker::LeanClient http(&f.loop, opts, curl, budget);
    worker::HttpRequest req;
    req.method = head ? "HEAD" : "GET";
    req.url = "http://127.0.0.1:" + std::to_string(f.server->port) + "/x";
    req.http_version = version;
    req.timeout_ms = 2000;
    req.follow_redirects = false;
    int calls = 0;
    worker::HttpResponse got;
    http.send(req, [&](worker::HttpResponse&& r) {
      ++calls;
      got = std::move(r);
    });
    while (calls == 0) uv_run(&f.loop, UV_RUN_ONCE);
    FUZZ_CHECK(calls == 1);
    if (got.status != 0) {
      FUZZ_CHECK(got.error.empty());
      FUZZ_CHECK(got.status >= 100);
      FUZZ_CHECK(got.body.size() <= opts.max_body_bytes);
      if (head) FUZZ_CHECK(got.body.empty());
    } else {
      FUZZ_CHECK(!got.error.empty());
    }
    FUZZ_CHECK(http.in_flight() == 0);
    FUZZ_CHECK(http.body_bytes() == 0);
    FUZZ_CHECK(budget.used == 0);
  }
  uv_run(&f.loop, UV_RUN_NOWAIT);  // the clients' handles close
}

}  // namespace corral::fuzz
