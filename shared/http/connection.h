// One accepted HTTP connection of a Server: reads requests through a RequestParser, hands them
// to the handler one at a time, and writes the answers in order. Internal to shared/http.
//
// Its life, as a state machine:
//   kReading  parsing; a complete request is dispatched, and the connection becomes
//   kAwaiting the handler holds a request; reading stops and unparsed bytes wait in pending_.
//             Its answer goes out, and the connection returns to kReading, or to
//   kBlocked  too many unsent bytes; reading stops until the write queue drains, or to
//   kClosing  the last answer has been queued (Connection: close, or an error answered by
//             the server): shut down writing, discard input, close on EOF or a linger timeout.
//   kUpgraded the answer was a 101 with an upgrade: the stream goes to the new protocol's
//             owner as soon as the handler has returned, and the connection closes without it.
//   kClosed   handles closed; the Server has been told and dropped its reference.
//
// While kReading, one timer runs to the deadline of what the parser waits for (its phase):
// the next request (idle timeout), the rest of the headers (header timeout) or of the body
// (body timeout). Deadlines are computed from when that wait began, never from the last byte.
//
// Every entry point (stream, timer and shutdown callbacks, Responder::send) keeps a
// shared_ptr to the connection for its duration, because it may close the connection and the
// Server then drops its own reference. Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shared/http/request_parser.h"
#include "shared/http/server.h"
#include "shared/uv/stream.h"
#include "shared/uv/timer.h"

namespace corral::http {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using OnClosed = std::function<void(Connection*)>;

  // `transport` and `peer` are copied into every request (see Request). `on_closed` runs
  // once, when the connection closes for any reason but detach().
  Connection(uv_loop_t* loop, std::unique_ptr<uv::Stream> stream,
             std::shared_ptr<const Handler> handler, const ServerOptions& opts, Transport transport,
             std::string peer, OnClosed on_closed);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();
  // Closes at once: queued writes are dropped. Safe to call twice.
  void close();
  // Forgets the Server, which is closing everything itself.
  void detach() { on_closed_ = nullptr; }
  // The answer to request number `seq`; ignored unless that request is the one awaited.
  void respond(uint64_t seq, Response&& r);

  // Whether closing it now loses nothing: a request has been answered and fully sent, and
  // nothing of the next one has arrived. The Server closes such connections to make room.
  bool idle() const;
  // uv_hrtime() of the last answer, which orders idle connections (uv_now() ticks in ms).
  uint64_t answered_ns() const { return answered_ns_; }

 private:
  enum class State { kReading, kAwaiting, kBlocked, kClosing, kUpgraded, kClosed };

  // Stream, timer and shutdown callbacks.
  void on_data(std::string_view bytes) noexcept;
  void on_end(int uv_status) noexcept;
  void on_timer() noexcept;
  void on_shutdown(int uv_status) noexcept;

  void on_read_tick();
  void on_drain_tick();
  void on_linger_tick();

  void feed(std::string_view data);
  void on_headers();
  void dispatch();
  void on_handler_failure(uint64_t seq, const char* what);
  void refuse(int status, std::string message);
  void send_response(const Response& r);
  void switch_protocols(const Response& r);
  void hand_over(std::string rest);
  void resume();
  void begin_closing();
  void start_reading();
  void stop_reading();
  uint64_t read_deadline() const;
  void arm_read_timer();
  void arm_timer(uint64_t timeout_ms, uint64_t repeat_ms);

  uv_loop_t* loop_;
  std::unique_ptr<uv::Stream> stream_;
  uv::Timer timer_;
  std::shared_ptr<const Handler> handler_;
  ServerOptions opts_;
  Transport transport_;
  std::string peer_;
  OnClosed on_closed_;
  State state_ = State::kReading;
  bool reading_ = false;
  bool in_dispatch_ = false;  // the handler is on the stack: feed() carries on after it
  bool peer_eof_ = false;
  bool shutdown_done_ = false;

  RequestParser parser_;
  std::string pending_;     // received, not yet parsed (while kAwaiting or kBlocked)
  uint64_t seq_ = 0;        // number of the request being answered; 0 before the first
  bool keep_alive_ = true;  // how to answer it
  bool http10_ = false;
  bool head_ = false;
  std::function<void(std::unique_ptr<uv::Stream>, std::string)> upgrade_;  // while kUpgraded

  // uv_now() times that the read deadlines count from.
  uint64_t request_began_ = 0;  // first byte of the current request (accept for the first)
  uint64_t headers_done_ = 0;   // end of the current request's headers
  uint64_t idle_since_ = 0;     // last answer queued (accept before the first)
  uint64_t answered_ns_ = 0;

  uint64_t drain_progress_ = 0;  // uv_now() when the write queue last shrank, while kBlocked
  size_t last_queued_ = 0;       // write queue size at the last drain or linger tick
};

}  // namespace corral::http
