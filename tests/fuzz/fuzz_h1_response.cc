// Fuzz target: the lean HTTP/1.1 client (worker/http/lean_client.h) reading whatever a server
// sends back: status line, headers, chunked or sized or close-delimited bodies, 1xx answers,
// gzip and deflate, over a real loopback connection on the client's own libuv loop.
//
// Input layout: byte 0 picks the size of the pieces the server writes (1 to 256 bytes) and
// byte 1 the request (GET or HEAD, small or large max_response, a memory budget small enough
// to pause the body or not); the rest is what the server sends, after which it closes.
// Checks: the callback runs exactly once; a response has no error and a body within
// max_response; the client ends with nothing in flight and every byte of the memory budget
// given back.
#include <uv.h>

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tests/fuzz/check.h"
#include "worker/http/curl_client.h"
#include "worker/http/lean_client.h"

namespace {

using corral::worker::BodyBudget;
using corral::worker::ClientOptions;
using corral::worker::CurlClient;
using corral::worker::LeanClient;
using corral::worker::HttpRequest;
using corral::worker::HttpResponse;

// A listener that answers each connection with the current input, in pieces, then closes.
struct Server {
  uv_loop_t* loop;
  uv_tcp_t listener;
  int port = 0;
  std::string_view answer;
  size_t piece = 1;

  explicit Server(uv_loop_t* l) : loop(l) {
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
    auto* self = static_cast<Server*>(l->data);
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

struct Fixture {
  uv_loop_t loop;
  std::unique_ptr<Server> server;
  Fixture() {
    uv_loop_init(&loop);
    server = std::make_unique<Server>(&loop);
  }
};

Fixture& fixture() {
  static Fixture* f = new Fixture();  // lives for the whole process, as a worker's loop does
  return *f;
}

}  // namespace

// As in a worker (worker/worker_main.cc): a write to a connection the other side closed is an
// error, not a signal. The server here writes its pieces to a client that may have given up.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::signal(SIGPIPE, SIG_IGN);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  Fixture& f = fixture();
  f.server->piece = 1 + data[0];
  f.server->answer = std::string_view(reinterpret_cast<const char*>(data) + 2, size - 2);
  uint8_t mode = data[1];
  ClientOptions opts;
  opts.max_body_bytes = (mode & 2) ? 64 : 1 << 16;
  BodyBudget budget{(mode & 4) ? 32u : 1u << 20, 0};
  {
    CurlClient curl(&f.loop, opts, &budget);
    LeanClient http(&f.loop, opts, curl, budget);
    HttpRequest req;
    req.method = (mode & 1) ? "HEAD" : "GET";
    req.url = "http://127.0.0.1:" + std::to_string(f.server->port) + "/x";
    req.timeout_ms = 2000;
    req.follow_redirects = false;
    int calls = 0;
    HttpResponse got;
    http.send(req, [&](HttpResponse&& r) {
      ++calls;
      got = std::move(r);
    });
    while (calls == 0) uv_run(&f.loop, UV_RUN_ONCE);
    FUZZ_CHECK(calls == 1);
    if (got.status != 0) {
      FUZZ_CHECK(got.error.empty());
      FUZZ_CHECK(got.body.size() <= opts.max_body_bytes);
      if (req.method == "HEAD") FUZZ_CHECK(got.body.empty());
    } else {
      FUZZ_CHECK(!got.error.empty());
    }
    FUZZ_CHECK(http.in_flight() == 0);
    FUZZ_CHECK(http.body_bytes() == 0);
    FUZZ_CHECK(budget.used == 0);
  }
  uv_run(&f.loop, UV_RUN_NOWAIT);  // the clients' handles close
  return 0;
}
