#include "worker/ws/socket.h"

#include <uv.h>

#include "worker/http/tls_session.h"
#include "worker/http/url.h"
#include "worker/ws/client.h"
#include "worker/ws/url.h"

namespace corral::worker::ws {
namespace {

Socket* of(http_parser* p) { return static_cast<Socket*>(p->data); }

double ms_since(uint64_t ns) { return static_cast<double>(uv_hrtime() - ns) / 1e6; }

}  // namespace

const http_parser_settings Socket::kSettings = [] {
  http_parser_settings s{};
  s.on_header_field = &Socket::on_header_field;
  s.on_header_value = &Socket::on_header_value;
  s.on_headers_complete = &Socket::on_headers_complete;
  return s;
}();

Socket::Socket(Client& client, OpenRequest req, Events& events, uint64_t id)
    : client_(client),
      req_(std::move(req)),
      url_(parse_ws_url(req_.url)),
      events_(events),
      id_(id),
      framing_(corral::ws::Role::kClient, req_.max_message, *this) {
  started_ns_ = uv_hrtime();
  open_deadline_ms_ = uv_now(client.loop()) + req_.timeout_ms;
}

Socket::~Socket() {
  if (link_) link_->close();
}

void Socket::resolved(const sockaddr* addr, const std::string& error) {
  if (state_ != State::kResolving) return;
  if (addr == nullptr) {
    fail_open(error);
    return;
  }
  const HttpUrl* url = &*url_;  // the client resolves only a URL that parsed
  std::unique_ptr<tls::Session> session;
  if (url->tls) {
    auto ctx = client_.tls_context(req_);
    if (!ctx) {
      fail_open(ctx.status().message());
      return;
    }
    auto made = tls::Session::make(**ctx, url->host, url->port, /*offer_h2=*/false);
    if (!made) {
      fail_open(made.status().message());
      return;
    }
    session = std::move(*made);
  }
  hello_.host_header = url->host_header();
  hello_.target = url->target;
  hello_.key = corral::ws::make_key();
  hello_.protocols = req_.protocols;
  hello_.headers = req_.headers;
  hello_.offer_deflate = req_.deflate;
  state_ = State::kConnecting;
  link_ = std::make_unique<Link>(client_.loop(), client_.handshakes(), this);
  sockaddr_in source{};
  const bool from = !req_.source.empty() && uv_ip4_addr(req_.source.c_str(), 0, &source) == 0;
  link_->connect(addr, open_deadline_ms_, std::move(session), from ? &source : nullptr);
}

void Socket::on_link_up(Link& l) {
  state_ = State::kUpgrading;
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
  std::string head;
  corral::ws::append_request(hello_, head);
  uv_buf_t buf = uv_buf_init(head.data(), static_cast<unsigned>(head.size()));
  int rc = l.send(&buf, 1);
  if (rc != 0) {
    fail_open("cannot send the Upgrade request: " +
              std::string(rc == UV_EPROTO ? l.tls_error() : uv_strerror(rc)));
    return;
  }
  l.arm(open_deadline_ms_);
}

void Socket::on_link_failed(Link& /*l*/, const std::string& error, bool /*tls*/) {
  // Link says "connection timed out" or "TLS handshake timed out" when the deadline passed.
  fail_open(error, error.find("timed out") != std::string::npos);
}

void Socket::on_link_data(Link& /*l*/, const char* data, size_t n) {
  if (state_ == State::kUpgrading) {
    read_answer(data, n);
    return;
  }
  if (state_ != State::kOpen && state_ != State::kClosing) return;
  Status s = framing_.feed(data, n, out_);
  write_out();
  if (!s.is_ok()) {
    end(Closed{framing_.code_received(), "", false, s.message()});
    return;
  }
  // The close handshake is complete once both closes have gone: the socket has ended. The
  // link stays until the server ends TCP (RFC 6455 7.1.1: the server closes first, so that the
  // client's ports do not wait in TIME_WAIT), for kCloseWaitMs at most.
  if (framing_.close_received() && framing_.close_sent()) {
    end(Closed{framing_.code_received(), std::move(reason_), server_closed_, ""}, true);
  }
}

void Socket::read_answer(const char* data, size_t n) {
  size_t used = http_parser_execute(&parser_, &kSettings, data, n);
  if (state_ != State::kUpgrading) return;  // failed in a callback
  if (parser_.upgrade != 0 && headers_done_) {
    upgraded(data + used, n - used);
    return;
  }
  if (HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
    fail_open(std::string("the Upgrade answer is not HTTP: ") +
              http_errno_description(HTTP_PARSER_ERRNO(&parser_)));
  }
}

int Socket::on_header_field(http_parser* p, const char* at, size_t len) {
  Socket* s = of(p);
  if (s->in_value_ || s->headers_.empty()) {
    s->headers_.emplace_back();
    s->in_value_ = false;
  }
  s->headers_.back().first.append(at, len);
  return 0;
}

int Socket::on_header_value(http_parser* p, const char* at, size_t len) {
  Socket* s = of(p);
  if (s->headers_.empty()) return 0;
  s->in_value_ = true;
  s->headers_.back().second.append(at, len);
  return 0;
}

// The whole head is here: anything but a 101 that agrees to what was asked fails the opening
// (its body is not waited for).
int Socket::on_headers_complete(http_parser* p) {
  Socket* s = of(p);
  s->headers_done_ = true;
  auto agreed = corral::ws::check_answer(p->status_code, s->headers_, s->hello_);
  if (!agreed) {
    s->fail_open(agreed.status().message());
  } else {
    s->protocol_ = agreed->protocol;
    s->framing_.use_deflate(agreed->deflate.on);
  }
  return 2;  // no body: what follows the head is frames (or nothing, after a failure)
}

void Socket::upgraded(const char* rest, size_t n) {
  state_ = State::kOpen;
  Opened o;
  o.status = 101;
  o.headers = std::move(headers_);
  o.protocol = std::move(protocol_);
  o.deflate = framing_.deflate();
  o.tls_ms = link_->handshake_ms();
  o.tls_resumed = link_->resumed();
  o.total_ms = ms_since(started_ns_);
  Counts& c = client_.counts_of(req_.group);
  ++c.opened;
  ++c.open;
  link_->release_buffers();
  if (req_.ping_every_ms > 0) link_->arm(uv_now(client_.loop()) + req_.ping_every_ms);
  const uint64_t id = id_;
  events_.on_open(*this, std::move(o));
  // The user may have dropped or closed it; frames that came with the answer go on.
  if (n > 0 && client_.alive(id) && state_ == State::kOpen) on_link_data(*link_, rest, n);
}

bool Socket::send(corral::ws::Kind kind, std::string_view data) {
  if (state_ != State::kOpen || framing_.close_sent()) return false;
  framing_.send(kind, data, out_);
  ++client_.counts_of(req_.group).sent;
  write_out();
  return true;
}

void Socket::close(uint16_t code, std::string_view reason) {
  if (state_ != State::kOpen) return;
  framing_.close(code, reason, out_);
  state_ = State::kClosing;
  link_->arm(uv_now(client_.loop()) + kCloseWaitMs);
  write_out();  // last: a write that fails ends the socket
}

void Socket::write_out() {
  if (out_.empty() || !link_) return;
  uv_buf_t buf = uv_buf_init(out_.data(), static_cast<unsigned>(out_.size()));
  int rc = link_->send(&buf, 1);
  out_.clear();
  if (rc != 0 && (state_ == State::kOpen || state_ == State::kClosing)) {
    end(Closed{
        0, "", false,
        "cannot write: " + std::string(rc == UV_EPROTO ? link_->tls_error() : uv_strerror(rc))});
  }
}

void Socket::on_message(corral::ws::Kind kind, std::string_view data) {
  if (state_ != State::kOpen) return;
  ++client_.counts_of(req_.group).received;
  events_.on_message(*this, kind, data);
}

void Socket::on_close_received(uint16_t /*code*/, std::string_view reason) {
  // Framing has queued the answer; on_link_data writes it and ends the socket.
  if (!framing_.close_sent()) server_closed_ = true;
  reason_ = std::string(reason);
}

void Socket::on_link_down(Link& /*l*/, int status, const std::string& error) {
  if (state_ == State::kClosed) {  // the server's end after the close handshake
    link_->close();
    return;
  }
  if (state_ == State::kUpgrading || state_ == State::kConnecting) {
    fail_open(error.empty() ? "the server closed the connection before answering the Upgrade"
                            : error);
    return;
  }
  Closed c;
  c.code = framing_.code_received();
  if (framing_.close_received()) {
    c.by_server = server_closed_;
  } else {
    // No close frame: the connection was dropped (RFC 6455 7.1.5: code 1006).
    c.by_server = true;
    c.error = !error.empty()     ? error
              : status == UV_EOF ? "the server closed the connection without a close frame"
                                 : std::string("the connection failed: ") + uv_strerror(status);
  }
  end(std::move(c));
}

void Socket::on_link_write_failed(Link& l, int status) { on_link_down(l, status, ""); }

void Socket::on_link_timer(Link& /*l*/) {
  const uint64_t now = uv_now(client_.loop());
  if (state_ == State::kClosed) {  // the server kept TCP open after the close handshake
    link_->close();
    return;
  }
  if (state_ == State::kConnecting || state_ == State::kUpgrading) {
    if (now < open_deadline_ms_) return;
    fail_open("the WebSocket did not open within " + std::to_string(req_.timeout_ms) + " ms", true);
    return;
  }
  if (state_ == State::kClosing) {
    end(Closed{framing_.code_received(), "", server_closed_,
               framing_.close_received() ? "" : "the server did not answer the close within 5 s"});
    return;
  }
  if (state_ == State::kOpen && req_.ping_every_ms > 0) {
    framing_.ping("", out_);
    write_out();
    if (state_ == State::kOpen) link_->arm(now + req_.ping_every_ms);
  }
}

void Socket::fail_open(const std::string& error, bool timed_out) {
  if (state_ == State::kOpen || state_ == State::kClosing || state_ == State::kClosed) return;
  Opened o;
  o.error = error;
  o.timed_out = timed_out;
  o.status = headers_done_ ? parser_.status_code : 0;
  o.headers = std::move(headers_);
  o.total_ms = ms_since(started_ns_);
  state_ = State::kClosed;
  if (link_) link_->close();
  ++client_.counts_of(req_.group).failed;
  events_.on_open(*this, std::move(o));
}

void Socket::abandon() {
  if (state_ == State::kOpen || state_ == State::kClosing) {
    Counts& c = client_.counts_of(req_.group);
    c.open -= c.open > 0 ? 1 : 0;
  }
  state_ = State::kClosed;
  if (link_) link_->close();
}

void Socket::end(Closed closed, bool linger) {
  if (state_ == State::kClosed) return;
  const bool was_open = state_ == State::kOpen || state_ == State::kClosing;
  state_ = State::kClosed;
  if (linger && link_) {
    link_->arm(uv_now(client_.loop()) + kCloseWaitMs);
  } else if (link_) {
    link_->close();
  }
  if (!was_open) return;
  Counts& c = client_.counts_of(req_.group);
  c.open -= c.open > 0 ? 1 : 0;
  if (!closed.error.empty()) {
    ++c.errors;
  } else if (closed.by_server) {
    ++c.closed_by_server;
  }
  if (!closed.error.empty() || closed.by_server) {
    ++c.close_codes[framing_.close_received() ? closed.code : corral::ws::kCloseAbnormal];
  }
  events_.on_closed(*this, std::move(closed));
}

}  // namespace corral::worker::ws
