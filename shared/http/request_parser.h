// Turns the bytes one client sends into HTTP/1.x requests, or into the refusal the server
// answers instead. Pure: no sockets, no clock, no loop. Connection drives one per connection,
// and a fuzz target can drive one alone.
//
// The parser stops at two points of every request, so that its caller can act before more
// input is parsed: when the request line and headers are complete (kHeaders: send
// "100 Continue", start the body clock), and when the whole request is (kRequest: hand it
// over). A refusal is final: the caller answers it and closes the connection.
//
// Refusals, with the status and {"error": message} the server answers:
//   400  malformed (http-parser's description), an invalid URL, or a request line without an
//        HTTP version (http-parser would take it for HTTP/0.9)
//   413  a body over max_body_bytes (by Content-Length, or as chunks arrive)
//   431  request line and headers over max_header_bytes, or more than max_header_count headers
//   505  any version but HTTP/1.0 and HTTP/1.1
//
// How a fuzz target drives it (any bytes must end in kNeedMore or kRefused, without crashing,
// leaking or looping):
//
//   using corral::http::RequestParser;
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     RequestParser parser(corral::http::ParseLimits{});
//     std::string_view in(reinterpret_cast<const char*>(data), size);
//     for (;;) {
//       RequestParser::Step step = parser.feed(in);
//       in.remove_prefix(step.consumed);
//       switch (step.event) {
//         case RequestParser::Event::kNeedMore: return 0;  // `in` is empty now
//         case RequestParser::Event::kHeaders: (void)parser.expects_continue(); break;
//         case RequestParser::Event::kRequest: {
//           corral::http::Request taken = std::move(parser.request());  // as a handler may
//           break;
//         }
//         case RequestParser::Event::kRefused: return 0;
//       }
//     }
//   }
//
// Splitting the same bytes into several feed() calls gives the same events and requests.
#pragma once

#include <http_parser.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "shared/http/message.h"

namespace corral::http {

struct ParseLimits {
  size_t max_header_bytes = 64 << 10;  // request line and headers
  size_t max_header_count = 100;
  size_t max_body_bytes = 1 << 20;
};

struct Refusal {
  int status = 0;       // 400, 413, 431 or 505; 0 while nothing is refused
  std::string message;  // for Response::error
};

class RequestParser {
 public:
  enum class Event {
    kNeedMore,  // every byte given was consumed; the request, if one has begun, is incomplete
    kHeaders,   // a request's line and headers are complete; call again with the rest
    kRequest,   // a whole request is ready: request() until the next feed()
    kRefused,   // the input is refused: refusal(). Final: later calls return it again
  };
  // What the parser is waiting for, which decides which timeout applies.
  enum class Phase {
    kIdle,     // the next request; nothing of it yet (stray CRLFs between requests don't count)
    kHeaders,  // the rest of a request line and headers that have begun
    kBody,     // the rest of a body
  };
  struct Step {
    Event event;
    size_t consumed;  // bytes of the input used; the caller passes the rest to the next feed()
  };

  explicit RequestParser(ParseLimits limits);
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Parses from the start of `data` up to the next event. Never holds on to `data`: what is
  // not consumed must be passed again. An empty `data` returns kNeedMore (or kRefused).
  Step feed(std::string_view data);
  Phase phase() const { return phase_; }

  // After kHeaders: whether the client waits for "100 Continue" before sending its body (curl
  // does for large bodies, and would otherwise stall for a second).
  bool expects_continue() const;

  // After kRequest, until the next feed(): the request (move from it freely; transport and
  // peer are left empty for the caller to fill), and how to answer it.
  Request& request() { return req_; }
  bool keep_alive() const { return keep_alive_; }
  bool http10() const { return http10_; }
  bool head() const { return head_; }
  // The method and request target of the request last begun, as sent: for log lines.
  const char* method() const;
  const std::string& url() const { return url_; }

  // After kRefused.
  const Refusal& refusal() const { return refusal_; }

 private:
  static const http_parser_settings kSettings;
  static int on_message_begin(http_parser* p) noexcept;
  static int on_url(http_parser* p, const char* at, size_t len) noexcept;
  static int on_header_field(http_parser* p, const char* at, size_t len) noexcept;
  static int on_header_value(http_parser* p, const char* at, size_t len) noexcept;
  static int on_headers_complete(http_parser* p) noexcept;
  static int on_body(http_parser* p, const char* at, size_t len) noexcept;
  static int on_message_complete(http_parser* p) noexcept;

  void reset_request();
  int count_header_bytes(size_t n);
  int check_version();
  bool split_url();
  int refuse(int status, std::string message);
  Step refused(size_t consumed);

  ParseLimits limits_;
  http_parser parser_;
  Phase phase_ = Phase::kIdle;
  Event paused_for_ = Event::kNeedMore;  // which callback paused http-parser

  // The request being parsed, reused from one request to the next.
  Request req_;
  std::string url_;
  size_t header_bytes_ = 0;
  bool in_header_value_ = false;
  bool keep_alive_ = true;
  bool http10_ = false;
  bool head_ = false;
  Refusal refusal_;
};

}  // namespace corral::http
