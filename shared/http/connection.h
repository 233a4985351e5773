// One accepted HTTP connection of a Server: parses requests, hands them to the handler one at a
// time, and writes the answers in order. Internal to shared/http.
//
// Its life, as a state machine:
//   kReading  parsing; a complete request is dispatched, and the connection becomes
//   kAwaiting the handler holds a request; reading stops and unparsed bytes wait in pending_.
//             Its answer goes out, and the connection returns to kReading, or to
//   kBlocked  too many unsent bytes; reading stops until the write queue drains, or to
//   kClosing  the last answer has been queued (Connection: close, or an error answered by
//             the server): shut down writing, discard input, close on EOF or a linger timeout.
//   kClosed   handles closed; the Server has been told and dropped its reference.
//
// Every entry point (stream, timer and shutdown callbacks, Responder::send) keeps a
// shared_ptr to the connection for its duration, because it may close the connection and the
// Server then drops its own reference. Loop thread only.
#pragma once

#include <http_parser.h>

#include <memory>
#include <string>
#include <string_view>

#include "shared/http/server.h"
#include "shared/uv/stream.h"
#include "shared/uv/timer.h"

namespace corral::http {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using OnClosed = std::function<void(Connection*)>;

  // `on_closed` runs once, when the connection closes for any reason but detach().
  Connection(uv_loop_t* loop, std::unique_ptr<uv::Stream> stream,
             std::shared_ptr<const Handler> handler, const ServerOptions& opts, OnClosed on_closed);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();
  // Closes at once: queued writes are dropped. Safe to call twice.
  void close();
  // Forgets the Server, which is closing everything itself.
  void detach() { on_closed_ = nullptr; }
  // The answer to request number `seq`; ignored unless that request is the one awaited.
  void respond(uint64_t seq, Response&& r);

 private:
  enum class State { kReading, kAwaiting, kBlocked, kClosing, kClosed };
  enum class Refusal { kNone, kHeadersTooLarge, kBodyTooLarge };

  // Stream, timer and shutdown callbacks.
  void on_data(std::string_view bytes) noexcept;
  void on_end(int uv_status) noexcept;
  void on_timer() noexcept;
  void on_shutdown(int uv_status) noexcept;

  void on_idle_tick();
  void on_drain_tick();
  void on_linger_tick();

  void feed(std::string_view data);
  void dispatch();
  void on_handler_failure(uint64_t seq, const char* what);
  void refuse(http_errno err);
  void send_response(const Response& r);
  void resume();
  void begin_closing();
  void start_reading();
  void stop_reading();
  void arm_timer(uint64_t timeout_ms, uint64_t repeat_ms);
  void arm_idle_timer(uint64_t timeout_ms);  // or stops the timer when idle timeouts are off

  // http-parser callbacks; parser->data is the Connection.
  static const http_parser_settings kParserSettings;
  static int on_message_begin(http_parser* p) noexcept;
  static int on_url(http_parser* p, const char* at, size_t len) noexcept;
  static int on_header_field(http_parser* p, const char* at, size_t len) noexcept;
  static int on_header_value(http_parser* p, const char* at, size_t len) noexcept;
  static int on_headers_complete(http_parser* p) noexcept;
  static int on_body(http_parser* p, const char* at, size_t len) noexcept;
  static int on_message_complete(http_parser* p) noexcept;
  int count_header_bytes(size_t n);
  bool expects_continue() const;

  uv_loop_t* loop_;
  std::unique_ptr<uv::Stream> stream_;
  uv::Timer timer_;
  std::shared_ptr<const Handler> handler_;
  ServerOptions opts_;
  OnClosed on_closed_;
  State state_ = State::kReading;
  bool reading_ = false;
  bool in_dispatch_ = false;  // the handler is on the stack: feed() carries on after it
  bool peer_eof_ = false;
  bool shutdown_done_ = false;

  // The request being parsed, reused from one request to the next.
  http_parser parser_;
  Request req_;
  std::string url_;
  size_t header_bytes_ = 0;
  bool in_header_value_ = false;
  Refusal refusal_ = Refusal::kNone;
  bool keep_alive_ = true;  // of the request being answered
  bool http10_ = false;
  bool head_ = false;
  uint64_t seq_ = 0;     // number of the request being answered
  std::string pending_;  // received, not yet parsed (while kAwaiting or kBlocked)

  uint64_t last_active_ = 0;  // uv_now() of the last byte read or answer written
  size_t last_queued_ = 0;    // write queue size at the last drain or linger tick
};

}  // namespace corral::http
