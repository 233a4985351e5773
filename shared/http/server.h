// An HTTP/1.1 server on a libuv loop: the master's control API, and the test target server.
//
// One Server listens on any number of TCP and unix sockets and calls one Handler per request.
// Requests are parsed by http-parser. Keep-alive follows HTTP/1.1 (and HTTP/1.0 with
// "Connection: keep-alive"); pipelined requests are answered in order, because a connection
// reads nothing more while its current request awaits its answer. Every response carries
// Content-Type and Content-Length.
//
// The server answers by itself, and then closes the connection (see request_parser.h):
//   400 {"error": "malformed HTTP request: ..."}: http-parser's description, an invalid URL,
//       or a request line without an HTTP version ("GET /health")
//   505 for any version but HTTP/1.0 and 1.1
//   413 when the body exceeds max_body_bytes; 431 when the request line and headers exceed
//       max_header_bytes, or there are more than max_header_count headers
//   408 when a request is not read in time (below)
// A handler that throws gets its request answered with 500 (and the exception is logged); the
// connection stays open.
//
// Timeouts, so that slow or silent clients cannot hold connections (and file descriptors)
// for long. Each runs from a fixed point; bytes trickling in do not extend it:
//   header_timeout_ms  the request line and headers, from the request's first byte (from the
//                      accept for a connection's first request);
//   body_timeout_ms    the whole body, from the end of the headers: a total, unlike nginx's
//                      client_body_timeout (between two reads), because bodies are small here
//                      and a body sent a byte at a time must not hold a connection forever;
//   idle_timeout_ms    the wait for the next request, from the last answer (and from the
//                      accept for the first, if it is the shorter).
// A request cut short gets 408. A connection on which nothing of a request has arrived is
// closed without an answer, as nginx does (nginx sends nothing on a 408 either, and only logs
// it; we answer partial requests so that a slow honest client learns why). No timeout runs
// while a handler holds a request. A timeout of 0 never expires.
//
// Each listener takes at most max_connections connections. At the cap, the connection idle
// the longest (answered, with nothing of its next request received or unsent) is closed to
// make room; when none is idle, the new connection is accepted and closed at once. A
// connection whose unsent responses exceed a few MiB is not read from until they drain.
//
// Everything here belongs to the loop thread.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shared/http/message.h"
#include "shared/status.h"

namespace corral::uv {
class Listener;
}

namespace corral::http {

class Connection;

// Answers one request. Copyable; the first send() of any copy answers, later ones do nothing.
// send() may come at any time, from the loop thread only: inside the handler, or later from
// a timer or another callback. If the connection has gone by then, send() does nothing. A
// handler must answer every request eventually: the connection waits for it (without timeout).
class Responder {
 public:
  void send(Response r) const;

 private:
  friend class Connection;
  Responder(std::weak_ptr<Connection> connection, uint64_t seq)
      : connection_(std::move(connection)), seq_(seq) {}

  std::weak_ptr<Connection> connection_;
  uint64_t seq_;
};

// Gets each request as an rvalue (move from it freely) and answers through `respond`.
// It may throw; see above.
using Handler = std::function<void(Request&& req, Responder respond)>;

// Limits and timeouts, explained above. New fields go last: callers initialise it in order.
struct ServerOptions {
  size_t max_body_bytes = 1 << 20;
  size_t max_header_bytes = 64 << 10;  // request line and headers
  uint64_t idle_timeout_ms = 60000;    // between requests
  size_t max_connections = 4096;       // per listener
  size_t max_header_count = 100;
  uint64_t header_timeout_ms = 10000;
  uint64_t body_timeout_ms = 30000;
};

class Server {
 public:
  // `loop` must outlive the Server. Nothing listens until listen_tcp() or listen_unix().
  Server(uv_loop_t* loop, Handler handler, ServerOptions opts = {});
  // Closes the listeners and every connection. A handler may be mid-request: its Responder
  // then does nothing. May run inside the handler (which lives on until its call returns).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Listens on `host` (an IPv4 or IPv6 literal) and `port` (0 picks one: see tcp_port()).
  // Errors as uv::Listener::tcp: kInvalidArgument for a bad host or port, kIo when the
  // address is taken or cannot be bound.
  Status listen_tcp(const std::string& host, int port, bool reuse_port = false);
  // The port of the first TCP listener, or 0 when there is none.
  int tcp_port() const;
  // Listens on the unix socket `path` with permissions `mode`, replacing a stale socket file.
  // Errors as uv::Listener::unix_socket: kAlreadyExists when a live process listens there.
  // The socket file is removed by close().
  Status listen_unix(const std::string& path, int mode = 0600);

  // Stops listening and closes every connection at once (unsent responses are dropped).
  // Safe to call twice; the Server may listen again afterwards.
  void close();
  size_t connection_count() const;

 private:
  struct Endpoint;  // a listener and the connections it accepted

  void on_connection(Endpoint& ep, int status);
  bool close_oldest_idle(Endpoint& ep);

  uv_loop_t* loop_;
  std::shared_ptr<const Handler> handler_;  // shared with connections that outlive a close()
  ServerOptions opts_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  uint64_t refused_ = 0;  // connections over the limit, for rate-limited logging
};

}  // namespace corral::http
