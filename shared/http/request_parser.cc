// RequestParser: http-parser driven one event at a time. Callbacks fill in req_ and enforce
// the limits; a callback that refuses records why and returns -1, which stops http-parser.
#include "shared/http/request_parser.h"

#include <algorithm>

namespace corral::http {
namespace {

constexpr size_t kHeaderLineBytes = 4;          // ": " and CRLF, counted against the limit
constexpr size_t kKeptBodyCapacity = 64 << 10;  // larger body buffers are freed between requests
constexpr size_t kMaxUrlBytes = 0xffff;         // http_parser_url offsets are 16-bit

RequestParser& parser_of(http_parser* p) { return *static_cast<RequestParser*>(p->data); }

}  // namespace

const http_parser_settings RequestParser::kSettings = [] {
  http_parser_settings s;
  http_parser_settings_init(&s);
  s.on_message_begin = &RequestParser::on_message_begin;
  s.on_url = &RequestParser::on_url;
  s.on_header_field = &RequestParser::on_header_field;
  s.on_header_value = &RequestParser::on_header_value;
  s.on_headers_complete = &RequestParser::on_headers_complete;
  s.on_body = &RequestParser::on_body;
  s.on_message_complete = &RequestParser::on_message_complete;
  return s;
}();

RequestParser::RequestParser(ParseLimits limits) : limits_(limits) {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
}

RequestParser::Step RequestParser::feed(std::string_view data) {
  if (refusal_.status != 0) return {Event::kRefused, 0};
  if (data.empty()) return {Event::kNeedMore, 0};  // http-parser would read it as EOF
  paused_for_ = Event::kNeedMore;
  size_t n =
      std::min(http_parser_execute(&parser_, &kSettings, data.data(), data.size()), data.size());
  http_errno err = HTTP_PARSER_ERRNO(&parser_);
  if (err == HPE_PAUSED) {  // on_headers_complete or on_message_complete paused
    http_parser_pause(&parser_, 0);
    return {paused_for_, n};
  }
  if (err != HPE_OK) {
    if (refusal_.status == 0 && err == HPE_HEADER_OVERFLOW) {
      refuse(431, "request headers exceed " + std::to_string(limits_.max_header_bytes) + " bytes");
    } else if (refusal_.status == 0) {
      refuse(400, std::string("malformed HTTP request: ") + http_errno_description(err));
    }
    return {Event::kRefused, n};
  }
  // http-parser stops early only after an upgrade request, whose answer ends the connection
  // (keep_alive() is false): the rest is not HTTP, and is dropped.
  return {Event::kNeedMore, data.size()};
}

bool RequestParser::expects_continue() const {
  bool has_body = (parser_.flags & F_CHUNKED) != 0 ||
                  ((parser_.flags & F_CONTENTLENGTH) != 0 && parser_.content_length > 0);
  bool http11 = parser_.http_major == 1 && parser_.http_minor >= 1;
  return has_body && http11 && iequals(req_.header("expect"), "100-continue");
}

const char* RequestParser::method() const {
  return http_method_str(static_cast<http_method>(parser_.method));
}

int RequestParser::refuse(int status, std::string message) {
  refusal_ = Refusal{status, std::move(message)};
  return -1;  // an error for every callback (on_headers_complete reads 1 and 2 otherwise)
}

// ---- http-parser callbacks ----

int RequestParser::on_message_begin(http_parser* p) noexcept {
  RequestParser& rp = parser_of(p);
  rp.phase_ = Phase::kHeaders;
  rp.reset_request();
  return 0;
}

void RequestParser::reset_request() {
  Request& r = req_;  // possibly moved from: clear() makes every member usable again
  r.method.clear();
  r.path.clear();
  r.query.clear();
  r.headers.clear();
  if (r.body.capacity() > kKeptBodyCapacity) {
    std::string().swap(r.body);
  } else {
    r.body.clear();
  }
  r.transport = Transport::kTcp;
  r.peer.clear();
  url_.clear();
  header_bytes_ = 0;
  in_header_value_ = false;
  keep_alive_ = true;
  http10_ = false;
  head_ = false;
}

int RequestParser::on_url(http_parser* p, const char* at, size_t len) noexcept {
  RequestParser& rp = parser_of(p);
  rp.url_.append(at, len);
  // http-parser sets 0.9 when the URL ends the line, just before this call. Nothing else
  // does: a URL cut short by the end of the input keeps the version of the previous request.
  if (p->http_major == 0 && p->http_minor == 9) {
    return rp.refuse(400, "malformed HTTP request: the request line has no HTTP version");
  }
  return rp.count_header_bytes(len);
}

int RequestParser::on_header_field(http_parser* p, const char* at, size_t len) noexcept {
  RequestParser& rp = parser_of(p);
  HeaderList& headers = rp.req_.headers;
  size_t counted = len;
  if (rp.in_header_value_ || headers.empty()) {  // a new header; else the field continues
    if (headers.empty() && rp.check_version() != 0) return -1;  // the request line is complete
    if (headers.size() >= rp.limits_.max_header_count) {
      return rp.refuse(
          431, "request has more than " + std::to_string(rp.limits_.max_header_count) + " headers");
    }
    headers.emplace_back();
    rp.in_header_value_ = false;
    counted += kHeaderLineBytes;
  }
  headers.back().first.append(at, len);
  return rp.count_header_bytes(counted);
}

int RequestParser::on_header_value(http_parser* p, const char* at, size_t len) noexcept {
  RequestParser& rp = parser_of(p);
  HeaderList& headers = rp.req_.headers;
  rp.in_header_value_ = true;
  if (headers.empty()) headers.emplace_back();  // http-parser always reports a field first
  headers.back().second.append(at, len);
  return rp.count_header_bytes(len);
}

int RequestParser::count_header_bytes(size_t n) {
  header_bytes_ += n;
  if (header_bytes_ <= limits_.max_header_bytes) return 0;
  return refuse(431,
                "request headers exceed " + std::to_string(limits_.max_header_bytes) + " bytes");
}

// Checked once the request line is complete: at the first header, or at the end of the headers
// when there are none.
int RequestParser::check_version() {
  unsigned major = parser_.http_major;
  unsigned minor = parser_.http_minor;
  if (major == 1 && minor <= 1) return 0;
  return refuse(505, "HTTP version not supported: HTTP/" + std::to_string(major) + "." +
                         std::to_string(minor));
}

int RequestParser::on_headers_complete(http_parser* p) noexcept {
  RequestParser& rp = parser_of(p);
  if (rp.check_version() != 0) return -1;
  if (!rp.split_url()) return rp.refuse(400, "malformed HTTP request: invalid URL");
  bool has_length = (p->flags & F_CONTENTLENGTH) != 0;
  if (has_length && p->content_length > rp.limits_.max_body_bytes) {
    return rp.refuse(
        413, "request body exceeds " + std::to_string(rp.limits_.max_body_bytes) + " bytes");
  }
  if (has_length) rp.req_.body.reserve(p->content_length);
  rp.phase_ = Phase::kBody;
  rp.paused_for_ = Event::kHeaders;
  http_parser_pause(p, 1);  // feed() returns kHeaders; the next feed() goes on with the body
  return 0;
}

// Fills in the method, path and query; false for a URL http-parser cannot split.
bool RequestParser::split_url() {
  http_parser_url u;
  http_parser_url_init(&u);
  if (url_.size() > kMaxUrlBytes ||
      http_parser_parse_url(url_.data(), url_.size(), parser_.method == HTTP_CONNECT, &u) != 0) {
    return false;
  }
  req_.method = method();
  if (u.field_set & (1 << UF_PATH)) {
    req_.path.assign(url_, u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
  } else {
    req_.path = "/";
  }
  if (u.field_set & (1 << UF_QUERY)) {
    req_.query.assign(url_, u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
  }
  return true;
}

int RequestParser::on_body(http_parser* p, const char* at, size_t len) noexcept {
  RequestParser& rp = parser_of(p);
  if (rp.req_.body.size() + len > rp.limits_.max_body_bytes) {  // chunked bodies end up here
    return rp.refuse(
        413, "request body exceeds " + std::to_string(rp.limits_.max_body_bytes) + " bytes");
  }
  rp.req_.body.append(at, len);
  return 0;
}

int RequestParser::on_message_complete(http_parser* p) noexcept {
  RequestParser& rp = parser_of(p);
  rp.keep_alive_ = http_should_keep_alive(p) != 0 && !p->upgrade;
  rp.http10_ = p->http_major == 1 && p->http_minor == 0;
  rp.head_ = p->method == HTTP_HEAD;
  rp.phase_ = Phase::kIdle;
  rp.paused_for_ = Event::kRequest;
  http_parser_pause(p, 1);  // feed() returns kRequest
  return 0;
}

}  // namespace corral::http
