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
#include "tests/fuzz/loopback_server.h"
#include "worker/http/curl_client.h"
#include "worker/http/lean_client.h"

namespace {

using corral::worker::BodyBudget;
using corral::worker::ClientOptions;
using corral::worker::CurlClient;
using corral::worker::LeanClient;
using corral::worker::HttpRequest;
using corral::worker::HttpResponse;

}  // namespace

// As in a worker (worker/worker_main.cc): a write to a connection the other side closed is an
// error, not a signal. The server here writes its pieces to a client that may have given up.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::signal(SIGPIPE, SIG_IGN);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  corral::fuzz::LoopbackFixture& f = corral::fuzz::loopback();
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
