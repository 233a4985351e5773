// http-parser callbacks of Connection: they fill in req_ and enforce the header and body limits.
#include "shared/http/connection.h"

namespace corral::http {
namespace {

constexpr size_t kHeaderLineBytes = 4;          // ": " and CRLF, counted against the limit
constexpr size_t kKeptBodyCapacity = 64 << 10;  // larger body buffers are freed between requests
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

Connection& connection_of(http_parser* p) { return *static_cast<Connection*>(p->data); }

}  // namespace

const http_parser_settings Connection::kParserSettings = [] {
  http_parser_settings s;
  http_parser_settings_init(&s);
  s.on_message_begin = &Connection::on_message_begin;
  s.on_url = &Connection::on_url;
  s.on_header_field = &Connection::on_header_field;
  s.on_header_value = &Connection::on_header_value;
  s.on_headers_complete = &Connection::on_headers_complete;
  s.on_body = &Connection::on_body;
  s.on_message_complete = &Connection::on_message_complete;
  return s;
}();

int Connection::on_message_begin(http_parser* p) noexcept {
  Connection& c = connection_of(p);
  Request& r = c.req_;  // possibly moved from: clear() makes every member usable again
  r.method.clear();
  r.path.clear();
  r.query.clear();
  r.headers.clear();
  if (r.body.capacity() > kKeptBodyCapacity) {
    std::string().swap(r.body);
  } else {
    r.body.clear();
  }
  c.url_.clear();
  c.header_bytes_ = 0;
  c.in_header_value_ = false;
  c.refusal_ = Refusal::kNone;
  c.keep_alive_ = true;
  c.http10_ = false;
  c.head_ = false;
  return 0;
}

int Connection::on_url(http_parser* p, const char* at, size_t len) noexcept {
  Connection& c = connection_of(p);
  c.url_.append(at, len);
  return c.count_header_bytes(len);
}

int Connection::on_header_field(http_parser* p, const char* at, size_t len) noexcept {
  Connection& c = connection_of(p);
  HeaderList& headers = c.req_.headers;
  size_t counted = len;
  if (c.in_header_value_ || headers.empty()) {  // a new header; else the field continues
    headers.emplace_back();
    c.in_header_value_ = false;
    counted += kHeaderLineBytes;
  }
  headers.back().first.append(at, len);
  return c.count_header_bytes(counted);
}

int Connection::on_header_value(http_parser* p, const char* at, size_t len) noexcept {
  Connection& c = connection_of(p);
  HeaderList& headers = c.req_.headers;
  c.in_header_value_ = true;
  if (headers.empty()) headers.emplace_back();  // http-parser always reports a field first
  headers.back().second.append(at, len);
  return c.count_header_bytes(len);
}

int Connection::count_header_bytes(size_t n) {
  header_bytes_ += n;
  if (header_bytes_ <= opts_.max_header_bytes) return 0;
  refusal_ = Refusal::kHeadersTooLarge;
  return 1;
}

int Connection::on_headers_complete(http_parser* p) noexcept {
  Connection& c = connection_of(p);
  bool has_length = (p->flags & F_CONTENTLENGTH) != 0;
  if (has_length && p->content_length > c.opts_.max_body_bytes) {
    c.refusal_ = Refusal::kBodyTooLarge;
    return -1;  // any value but 0, 1 and 2 is an error
  }
  if (has_length) c.req_.body.reserve(p->content_length);
  if (c.expects_continue()) (void)c.stream_->write(std::string(kContinue));
  return 0;
}

// Whether the client waits for "100 Continue" before sending its body (curl does for large
// bodies, and would otherwise stall for a second).
bool Connection::expects_continue() const {
  bool has_body = (parser_.flags & F_CHUNKED) != 0 ||
                  ((parser_.flags & F_CONTENTLENGTH) != 0 && parser_.content_length > 0);
  bool http11 = parser_.http_major == 1 && parser_.http_minor >= 1;
  return has_body && http11 && iequals(req_.header("expect"), "100-continue");
}

int Connection::on_body(http_parser* p, const char* at, size_t len) noexcept {
  Connection& c = connection_of(p);
  if (c.req_.body.size() + len > c.opts_.max_body_bytes) {  // chunked bodies end up here
    c.refusal_ = Refusal::kBodyTooLarge;
    return 1;
  }
  c.req_.body.append(at, len);
  return 0;
}

int Connection::on_message_complete(http_parser* p) noexcept {
  Connection& c = connection_of(p);
  c.keep_alive_ = http_should_keep_alive(p) != 0 && !p->upgrade;
  c.http10_ = p->http_major == 1 && p->http_minor == 0;
  c.head_ = p->method == HTTP_HEAD;
  http_parser_pause(p, 1);  // feed() dispatches the request, then un-pauses
  return 0;
}

}  // namespace corral::http
