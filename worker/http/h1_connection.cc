#include "worker/http/h1_connection.h"

#include <algorithm>
#include <climits>

#include "config/config.h"
#include "config/scenario/response.h"
#include "worker/http/lean_client.h"
#include "worker/http/origin.h"
#include "worker/http/redirect.h"
#include "worker/http/wire.h"

namespace corral::worker::h1 {
namespace {

using Kind = OriginErrorTable::Kind;
constexpr int kNoCount = -1;

Connection* of(http_parser* p) { return static_cast<Connection*>(p->data); }

void trim_value(std::string& v) {
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
}

}  // namespace

const http_parser_settings Connection::kSettings = [] {
  http_parser_settings s{};
  s.on_header_field = &Connection::on_header_field;
  s.on_header_value = &Connection::on_header_value;
  s.on_headers_complete = &Connection::on_headers_complete;
  s.on_body = &Connection::on_body;
  s.on_message_complete = &Connection::on_message_complete;
  return s;
}();

Connection::Connection(LeanClient& client, lean::Origin& origin, std::unique_ptr<Link> link,
                       uint64_t pin)
    : client_(client), origin_(origin), link_(std::move(link)), pin_(pin) {
  link_->set_owner(this);
  idle_since_ms_ = uv_now(client.loop());
}

Connection::~Connection() { link_->close(); }

void Connection::begin(std::unique_ptr<Exchange> ex) {
  ex_ = std::move(ex);
  ex_->started_ns = uv_hrtime();
  if (served_ == 0 && link_->tls()) {  // this exchange waited for the handshake
    ex_->resp.tls_ms += link_->handshake_ms();
    ex_->resp.total_ms += link_->handshake_ms();
    ex_->resp.tls_resumed = link_->resumed();
  }
  ex_->resp.headers.reserve(8);  // one allocation for a usual answer's headers, not four
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
  in_value_ = got_bytes_ = done_ = paused_ = false;
  need_ = 0;
  keep_alive_ = true;
  client_.on_wire(+1);
  link_->arm(ex_->deadline_ms);
  write_request();
}

void Connection::write_request() {
  out_.clear();
  lean::write_request_head(*ex_, origin_.host_header(), out_);
  uv_buf_t bufs[2] = {uv_buf_init(out_.data(), static_cast<unsigned>(out_.size())),
                      uv_buf_init(ex_->req.body.data(), static_cast<unsigned>(ex_->req.body.size()))};
  int rc = link_->send(bufs, ex_->req.body.empty() ? 1 : 2);
  if (rc != 0) {
    std::string why = rc == UV_EPROTO ? link_->tls_error() : uv_strerror(rc);
    fail("cannot send the request: " + why, kNoCount);
  }
}

void Connection::on_link_write_failed(Link&, int status) {
  if (closing_) return;
  // A server that answers and closes before reading the whole body: the answer counts.
  if (ex_ && got_bytes_) return;
  on_end(status, "");
}

void Connection::on_link_data(Link&, const char* data, size_t n) {
  if (closing_) return;
  if (!ex_) {  // bytes on an idle connection: nothing was asked, so it cannot be reused
    close();
    return;
  }
  got_bytes_ = true;
  feed(data, n);
}

void Connection::on_link_down(Link&, int status, const std::string& error) {
  if (!closing_) on_end(status, error);
}

void Connection::on_link_timer(Link&) {
  if (closing_ || !ex_) return;  // idle: nothing to time out
  if (uv_now(client_.loop()) < ex_->deadline_ms) {  // armed for an earlier exchange
    link_->arm(ex_->deadline_ms);
    return;
  }
  fail("Timeout was reached", static_cast<int>(Kind::kTimeout));
}

void Connection::feed(const char* data, size_t len) {
  if (paused_) {  // more plaintext of a TLS read after the budget paused the body
    stash_wire_.append(data, len);
    return;
  }
  size_t used = http_parser_execute(&parser_, &kSettings, data, len);
  if (done_) {
    if (used < len) keep_alive_ = false;  // bytes past the answer: the stream is out of step
    complete();
    return;
  }
  if (paused_) {  // the budget paused the body: the rest is read again once memory frees
    stash_wire_.assign(data + used, len - used);
    link_->read_stop();
    client_.paused(this);
    return;
  }
  auto err = HTTP_PARSER_ERRNO(&parser_);
  if (err == HPE_OK) return;
  if (ex_->too_large) {
    fail(lean::too_large_error(*ex_), kNoCount);
  } else if (!ex_->bad_body.empty()) {
    fail(ex_->bad_body, kNoCount);
  } else {
    fail(std::string("invalid HTTP response: ") + http_errno_description(err), kNoCount);
  }
}

void Connection::on_end(int status, const std::string& tls_error) {
  if (!ex_) {  // closed while idle: a keep-alive timeout, a restart
    close();
    return;
  }
  if (status == UV_EOF && tls_error.empty() && got_bytes_ && !done_) {
    http_parser_execute(&parser_, &kSettings, nullptr, 0);  // a body ended by close
    if (done_) {
      keep_alive_ = false;
      complete();
      return;
    }
  }
  if (!got_bytes_ && tls_error.empty() && reused() && !ex_->retried &&
      is_idempotent(ex_->req.method)) {
    client_.errors().count(origin_.key(), Kind::kRetried);
    std::unique_ptr<Exchange> ex = std::move(ex_);
    client_.on_wire(-1);
    ex->retried = true;
    lean::Origin& origin = origin_;
    close();
    origin.submit(std::move(ex));
    return;
  }
  std::string why = tls_error.empty() ? transport_error(status)
                                      : tls_error + " (" + origin_.key() + ")";
  fail(why, static_cast<int>(Kind::kReset));
}

std::string Connection::transport_error(int status) const {
  if (!got_bytes_) {
    return status == UV_EOF ? "empty reply from server (connection closed before any byte)"
                            : std::string("connection failed before any answer: ") +
                                  uv_strerror(status);
  }
  return status == UV_EOF
             ? "connection closed by the server before the response ended"
             : std::string("connection failed during the response: ") + uv_strerror(status);
}

void Connection::fail(const std::string& error, int kind) {
  if (!ex_) {
    close();
    return;
  }
  if (kind != kNoCount) client_.errors().count(origin_.key(), static_cast<Kind>(kind));
  std::unique_ptr<Exchange> ex = std::move(ex_);
  client_.on_wire(-1);
  if (paused_) client_.unpaused(this);
  paused_ = false;
  LeanClient& client = client_;
  close();
  ex->resp.status = 0;
  ex->resp.error = error;
  ex->resp.timed_out = kind == static_cast<int>(Kind::kTimeout);
  client.exchange_failed(std::move(ex));
}

void Connection::fail_over_budget() {
  fail("response bodies in flight exceed the worker's response memory budget (" +
           config::format_bytes(client_.budget().limit) + ")",
       kNoCount);
}

void Connection::complete() {
  std::unique_ptr<Exchange> ex = std::move(ex_);
  client_.on_wire(-1);
  ++served_;
  ex->resp.protocol = "HTTP/1.1";
  ex->resp.total_ms += static_cast<double>(uv_hrtime() - ex->started_ns) / 1e6;
  LeanClient& client = client_;
  if (keep_alive_) {
    idle_since_ms_ = uv_now(client.loop());
    origin_.on_ready(this);  // may begin the next exchange on this connection at once
  } else {
    close();
  }
  client.exchange_done(std::move(ex));
}

void Connection::close() {
  if (closing_) return;
  closing_ = true;
  link_->close();
  origin_.on_closed(this);  // the origin hands this object to the client to free later
}

bool Connection::try_resume() {
  if (need_ > 0 ? !client_.budget().fits(need_)
                 : !client_.budget().fits(stash_body_.size())) {
    return false;
  }
  if (need_ > 0) {
    lean::reserve_body(client_, *ex_, need_);
    need_ = 0;
  }
  paused_ = false;
  std::string piece = std::move(stash_body_);
  stash_body_.clear();
  lean::append_body(client_, *ex_, piece.data(), piece.size());
  http_parser_pause(&parser_, 0);
  std::string wire = std::move(stash_wire_);
  stash_wire_.clear();
  if (!wire.empty()) feed(wire.data(), wire.size());
  if (!paused_ && !closing_) link_->read_start();
  return true;
}

// --- http-parser callbacks ---------------------------------------------------------------

int Connection::on_header_field(http_parser* p, const char* at, size_t len) {
  Connection* c = of(p);
  auto& headers = c->ex_->resp.headers;
  if (headers.empty() || c->in_value_) {
    headers.emplace_back(std::string(at, len), std::string());
    c->in_value_ = false;
  } else {
    headers.back().first.append(at, len);
  }
  return 0;
}

int Connection::on_header_value(http_parser* p, const char* at, size_t len) {
  Connection* c = of(p);
  c->ex_->resp.headers.back().second.append(at, len);
  c->in_value_ = true;
  return 0;
}

int Connection::on_headers_complete(http_parser* p) {
  Connection* c = of(p);
  Exchange& ex = *c->ex_;
  HttpResponse& resp = ex.resp;
  resp.status = p->status_code;
  c->in_value_ = false;
  if (p->status_code < 100) {  // 0 would read as "no response" to the engine
    ex.bad_body = "invalid HTTP response: status " + std::to_string(p->status_code);
    return -1;
  }
  if (p->status_code / 100 == 1 && p->status_code != 101) return 0;  // interim: skipped
  // No body, whatever Content-Length says: a HEAD's answer, 204, 304.
  bool bodiless = ex.req.method == "HEAD" || p->status_code == 204 || p->status_code == 304;
  for (auto& [name, value] : resp.headers) {
    trim_value(value);
    if (!ex.inflate && scenario::equals_ignoring_case(name, "Content-Encoding")) {
      ex.inflate = Inflater::for_encoding(value);
    }
  }
  // A Content-Length over the cap fails at once, before any byte of the body.
  bool sized = p->content_length != ULLONG_MAX && p->content_length > 0 && !ex.inflate;
  if (bodiless) return 1;  // 1: no body follows
  if (sized && p->content_length > ex.max_body) {
    ex.too_large = true;
    return -1;  // an error: http-parser stops with HPE_CB_headers_complete
  }
  // Without room for a known length, the body is not read yet.
  if (sized && !lean::reserve_body(c->client_, ex, p->content_length)) {
    c->need_ = p->content_length;
    c->paused_ = true;
    http_parser_pause(p, 1);
  }
  return 0;
}

int Connection::on_body(http_parser* p, const char* at, size_t len) {
  Connection* c = of(p);
  switch (lean::take_body(c->client_, *c->ex_, at, len, c->stash_body_)) {
    case lean::Take::kTaken: return 0;
    case lean::Take::kWait:
      c->paused_ = true;
      http_parser_pause(p, 1);
      return 0;
    case lean::Take::kTooLarge:
    case lean::Take::kBad: return 1;
  }
  return 1;
}

int Connection::on_message_complete(http_parser* p) {
  Connection* c = of(p);
  int status = p->status_code;
  if (status / 100 == 1 && status != 101) {  // an interim answer: the real one follows
    c->ex_->resp.headers.clear();
    return 0;
  }
  c->done_ = true;
  c->keep_alive_ = status != 101 && http_should_keep_alive(p) != 0;
  http_parser_pause(p, 1);  // nothing after this answer is parsed
  return 0;
}

}  // namespace corral::worker::h1
