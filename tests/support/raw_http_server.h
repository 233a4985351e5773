// A scripted TCP server for testing HTTP clients byte by byte: on 127.0.0.1, an ephemeral
// port, the caller's loop (no thread). Each connection reads one request at a time (the head up
// to "\r\n\r\n", then Content-Length bytes of body) and plays the script the test returns for
// it: bytes to send, pauses, a clean close (FIN) or a reset (RST). A script that ends without
// closing keeps the connection for the next request; an empty one never answers.
//
// Everything the server read is kept for assertions: every request in order, and per
// connection the raw bytes and how many requests it carried. Loop thread only. Destroying the
// server (or close()) closes its handles; the loop then ends with none of them left.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shared/uv/listener.h"

namespace corral::test {

// One step of a script. Each step starts once the previous one is done: a send once its bytes
// are in the kernel, a wait once its timer fires.
struct Step {
  enum class Kind { kSend, kTrickle, kWait, kClose, kReset };
  Kind kind;
  std::string bytes;  // kSend, kTrickle
  uint64_t ms = 0;    // kWait; kTrickle: the pause between two bytes
};
using Script = std::vector<Step>;

Step send(std::string bytes);
Step trickle(std::string bytes, uint64_t every_ms);  // one byte at a time
Step wait_ms(uint64_t ms);
Step close_connection();  // FIN once the bytes before it are sent; closed when the client ends
Step reset_connection();  // SO_LINGER 0 and close: the client gets an RST

// A request as the server read it.
struct RawRequest {
  size_t connection = 0;     // 0 for the first connection accepted, and so on
  size_t on_connection = 0;  // 1 for the first request of its connection
  std::string peer;          // the client's IP address, as the connection came from
  std::string method;
  std::string target;  // "/path?query", as sent
  std::string bytes;   // the request as received, head and body
  std::string body;
};

class RawHttpServer {
 public:
  // Chooses the script for each request; called on the loop, as soon as the request is read.
  using ScriptFor = std::function<Script(const RawRequest&)>;

  // Listens at once; aborts the test program when it cannot (a test has no use without it).
  RawHttpServer(uv_loop_t* loop, ScriptFor script_for);
  ~RawHttpServer();
  RawHttpServer(const RawHttpServer&) = delete;
  RawHttpServer& operator=(const RawHttpServer&) = delete;

  int port() const { return port_; }  // kept after close(), for a test that needs a dead port
  // "http://127.0.0.1:<port>" followed by `path`.
  std::string url(std::string_view path) const;

  const std::vector<RawRequest>& requests() const { return requests_; }
  size_t connections() const;  // accepted so far
  size_t open_connections() const { return open_; }
  size_t peak_open_connections() const { return peak_open_; }
  // The bytes connection `index` received, and the requests it carried.
  const std::string& received(size_t index) const;
  size_t requests_on(size_t index) const;

  // Stops listening and closes every connection at once. Safe to call twice.
  void close();

 private:
  class Connection;
  void on_connection(int status);
  void opened();
  void closed();
  Script script_for(RawRequest req);

  uv_loop_t* loop_;
  ScriptFor script_for_;
  std::unique_ptr<uv::Listener> listener_;
  int port_ = 0;
  std::vector<std::unique_ptr<Connection>> connections_;  // kept once closed, for their logs
  std::vector<RawRequest> requests_;
  size_t open_ = 0;
  size_t peak_open_ = 0;
};

}  // namespace corral::test
