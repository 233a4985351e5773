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
  corral::fuzz::fetch_and_check(f, mode & 1, mode);
  return 0;
}
