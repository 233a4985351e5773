#include "worker/http/h1_connection.h"

#include <algorithm>
#include <cstring>

#include "config/config.h"
#include "config/scenario/response.h"
#include "shared/uv/guard.h"
#include "worker/http/h1_client.h"
#include "worker/http/h1_wire.h"
#include "worker/http/redirect.h"

namespace corral::worker::h1 {
namespace {

using Kind = OriginErrorTable::Kind;
constexpr int kNoCount = -1;

// One read buffer for every connection of the loop: a read callback consumes its bytes
// before the next read starts, so an idle connection holds no buffer at all.
char g_read_buffer[64 * 1024];

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

Connection::Connection(H1Client& client, Origin& origin) : client_(client), origin_(origin) {
  uv_tcp_init(client.loop(), tcp_.get());
  tcp_.set_live(this);
  uv_timer_init(client.loop(), timer_.get());
  timer_.set_live(this);
}

Connection::~Connection() {
  tcp_.close();
  timer_.close();
}

void Connection::connect(const sockaddr* addr, uint64_t timeout_ms, const sockaddr_in* source) {
  if (source != nullptr) {
    if (int rc = open_from(addr, *source); rc != 0) {
      origin_.connect_failed(this, std::string("binding source address: ") + uv_strerror(rc));
      return;
    }
  }
  auto* req = new uv_connect_t;
  int rc = uv_tcp_connect(req, tcp_.get(), addr, &Connection::on_connect);
  if (rc != 0) {
    delete req;
    origin_.connect_failed(this, uv_strerror(rc));
    return;
  }
  arm(uv_now(client_.loop()) + std::max<uint64_t>(1, timeout_ms));
}

// The timer is armed for the earliest deadline it has been asked for, and left running when an
// exchange ends: most requests share one timeout, so the next exchange's deadline is later and
// needs no new arming. When it fires, a deadline not reached yet re-arms it. Starting and
// stopping a timer per request would cost a removal from and an insertion into a heap that
// also holds every waiting instance's timer.
void Connection::arm(uint64_t deadline_ms) {
  if (armed_ms_ != 0 && armed_ms_ <= deadline_ms) return;
  uint64_t now = uv_now(client_.loop());
  uv_timer_start(timer_.get(), &Connection::on_timeout, deadline_ms > now ? deadline_ms - now : 1,
                 0);
  armed_ms_ = deadline_ms;
}

void Connection::on_connect(uv_connect_t* req, int status) {
  uv_stream_t* stream = req->handle;
  delete req;
  auto* c = uv::owner_of<Connection>(stream);
  if (c == nullptr || c->closing_) return;
  uv_timer_stop(c->timer_.get());
  c->armed_ms_ = 0;
  if (status != 0) {
    c->origin_.connect_failed(c, uv_strerror(status));
    return;
  }
  uv_tcp_nodelay(c->tcp_.get(), 1);
  uv_read_start(stream, &Connection::on_alloc, &Connection::on_read);
  c->ready_ = true;
  c->idle_since_ms_ = uv_now(c->client_.loop());
  c->origin_.on_ready(c);
}

void Connection::begin(std::unique_ptr<Exchange> ex) {
  ex_ = std::move(ex);
  ex_->started_ns = uv_hrtime();
  ex_->resp.headers.reserve(8);  // one allocation for a usual answer's headers, not four
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
  inflate_.reset();
  in_value_ = got_bytes_ = done_ = too_large_ = paused_ = false;
  need_ = 0;
  keep_alive_ = true;
  bad_body_.clear();
  client_.on_wire(+1);
  arm(ex_->deadline_ms);
  write_request();
}

void Connection::write_request() {
  out_.clear();
  write_request_head(*ex_, origin_.host_header(), out_);
  uv_buf_t bufs[2] = {uv_buf_init(out_.data(), static_cast<unsigned>(out_.size())),
                      uv_buf_init(ex_->req.body.data(), static_cast<unsigned>(ex_->req.body.size()))};
  unsigned nbufs = ex_->req.body.empty() ? 1 : 2;
  int wrote = uv_try_write(tcp_.stream(), bufs, nbufs);
  size_t total = out_.size() + ex_->req.body.size();
  if (wrote >= 0 && static_cast<size_t>(wrote) == total) return;  // the usual case: all sent
  if (wrote < 0 && wrote != UV_EAGAIN) {
    fail(std::string("cannot send the request: ") + uv_strerror(wrote), kNoCount);
    return;
  }
  // The rest waits in a buffer of its own until libuv has written it.
  size_t sent = wrote > 0 ? static_cast<size_t>(wrote) : 0;
  auto* w = new PendingWrite;
  w->bytes = out_;
  w->bytes += ex_->req.body;
  w->bytes.erase(0, sent);
  uv_buf_t buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
  int rc = uv_write(&w->req, tcp_.stream(), &buf, 1, &Connection::on_write);
  if (rc != 0) {
    delete w;
    fail(std::string("cannot send the request: ") + uv_strerror(rc), kNoCount);
  }
}

void Connection::on_write(uv_write_t* req, int status) {
  std::unique_ptr<PendingWrite> w(reinterpret_cast<PendingWrite*>(req));
  auto* c = uv::owner_of<Connection>(req->handle);
  if (c == nullptr || status == 0 || c->closing_) return;
  // A server that answers and closes before reading the whole body: the answer counts.
  if (c->ex_ && c->got_bytes_) return;
  c->on_end(status);
}

void Connection::on_alloc(uv_handle_t*, size_t, uv_buf_t* buf) {
  *buf = uv_buf_init(g_read_buffer, sizeof g_read_buffer);
}

void Connection::on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* c = uv::owner_of<Connection>(s);
  if (c == nullptr || c->closing_ || n == 0) return;
  if (n < 0) {
    c->on_end(static_cast<int>(n));
    return;
  }
  if (!c->ex_) {  // bytes on an idle connection: nothing was asked, so it cannot be reused
    c->close();
    return;
  }
  c->got_bytes_ = true;
  c->feed(buf->base, static_cast<size_t>(n));
}

void Connection::on_timeout(uv_timer_t* t) {
  auto* c = uv::owner_of<Connection>(t);
  if (c == nullptr || c->closing_) return;
  c->armed_ms_ = 0;
  if (!c->ready_) {
    c->origin_.connect_failed(c, "connection timed out");
    return;
  }
  if (!c->ex_) return;  // idle: nothing to time out
  if (uv_now(c->client_.loop()) < c->ex_->deadline_ms) {  // armed for an earlier exchange
    c->arm(c->ex_->deadline_ms);
    return;
  }
  c->fail("Timeout was reached", static_cast<int>(Kind::kTimeout));
}

void Connection::feed(const char* data, size_t len) {
  size_t used = http_parser_execute(&parser_, &kSettings, data, len);
  if (done_) {
    if (used < len) keep_alive_ = false;  // bytes past the answer: the stream is out of step
    complete();
    return;
  }
  if (paused_) {  // the budget paused the body: the rest is read again once memory frees
    stash_wire_.assign(data + used, len - used);
    uv_read_stop(tcp_.stream());
    client_.paused(this);
    return;
  }
  auto err = HTTP_PARSER_ERRNO(&parser_);
  if (err == HPE_OK) return;
  if (too_large_) {
    fail("response body larger than max_response (" + config::format_bytes(ex_->max_body) + ")",
         kNoCount);
  } else if (!bad_body_.empty()) {
    fail(bad_body_, kNoCount);
  } else {
    fail(std::string("invalid HTTP response: ") + http_errno_description(err), kNoCount);
  }
}

void Connection::on_end(int status) {
  if (!ex_) {  // closed while idle: a keep-alive timeout, a restart
    close();
    return;
  }
  if (status == UV_EOF && got_bytes_ && !done_) {
    http_parser_execute(&parser_, &kSettings, nullptr, 0);  // a body ended by close
    if (done_) {
      keep_alive_ = false;
      complete();
      return;
    }
  }
  if (!got_bytes_ && reused() && !ex_->retried && is_idempotent(ex_->req.method)) {
    client_.errors().count(origin_.key(), Kind::kRetried);
    std::unique_ptr<Exchange> ex = std::move(ex_);
    client_.on_wire(-1);
    ex->retried = true;
    Origin& origin = origin_;
    close();
    origin.submit(std::move(ex));
    return;
  }
  fail(transport_error(status), static_cast<int>(Kind::kReset));
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
  H1Client& client = client_;
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
  ex->resp.total_ms += static_cast<double>(uv_hrtime() - ex->started_ns) / 1e6;
  H1Client& client = client_;
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
  uv_timer_stop(timer_.get());
  uv_read_stop(tcp_.stream());
  origin_.on_closed(this);  // the origin hands this object to the client to free later
}

size_t Connection::held_body() const { return ex_ ? ex_->resp.body.size() : 0; }

bool Connection::try_resume() {
  if (need_ > 0 ? !client_.budget().fits(need_)
                 : !client_.budget().fits(stash_body_.size())) {
    return false;
  }
  if (need_ > 0) {
    reserve(need_);
    need_ = 0;
  }
  paused_ = false;
  std::string piece = std::move(stash_body_);
  stash_body_.clear();
  append_body(piece.data(), piece.size());
  http_parser_pause(&parser_, 0);
  std::string wire = std::move(stash_wire_);
  stash_wire_.clear();
  uv_read_start(tcp_.stream(), &Connection::on_alloc, &Connection::on_read);
  if (!wire.empty()) feed(wire.data(), wire.size());
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
  HttpResponse& resp = c->ex_->resp;
  resp.status = p->status_code;
  c->in_value_ = false;
  if (p->status_code < 100) {  // 0 would read as "no response" to the engine
    c->bad_body_ = "invalid HTTP response: status " + std::to_string(p->status_code);
    return -1;
  }
  if (p->status_code / 100 == 1 && p->status_code != 101) return 0;  // interim: skipped
  // No body, whatever Content-Length says: a HEAD's answer, 204, 304.
  bool bodiless = c->ex_->req.method == "HEAD" || p->status_code == 204 || p->status_code == 304;
  for (auto& [name, value] : resp.headers) {
    trim_value(value);
    if (!c->inflate_ && scenario::equals_ignoring_case(name, "Content-Encoding")) {
      c->inflate_ = Inflater::for_encoding(value);
    }
  }
  // A Content-Length over the cap fails at once, before any byte of the body.
  bool sized = p->content_length != ULLONG_MAX && p->content_length > 0 && !c->inflate_;
  if (bodiless) return 1;  // 1: no body follows
  if (sized && p->content_length > c->ex_->max_body) {
    c->too_large_ = true;
    return -1;  // an error: http-parser stops with HPE_CB_headers_complete
  }
  // A known length is taken from the budget whole, before the body is read: bodies in flight
  // then never all wait for each other's memory. Without room, the body is not read yet.
  if (sized && !c->reserve(p->content_length)) {
    c->need_ = p->content_length;
    c->paused_ = true;
    http_parser_pause(p, 1);
  }
  return 0;
}

bool Connection::reserve(uint64_t bytes) {
  if (!client_.budget().fits(bytes)) return false;
  client_.budget().used += bytes;
  ex_->budget_held += bytes;
  ex_->reserved = bytes;
  return true;
}

int Connection::on_body(http_parser* p, const char* at, size_t len) {
  Connection* c = of(p);
  return c->take_body(at, len) ? 0 : 1;
}

bool Connection::take_body(const char* data, size_t len) {
  std::string decoded;
  std::string_view piece(data, len);
  uint64_t room = ex_->max_body - std::min<uint64_t>(ex_->max_body, ex_->resp.body.size());
  if (inflate_) {
    switch (inflate_->feed(data, len, decoded, room)) {
      case Inflater::Result::kOk: break;
      case Inflater::Result::kTooLarge: too_large_ = true; return false;
      case Inflater::Result::kBad: bad_body_ = inflate_->error(); return false;
    }
    piece = decoded;
  } else if (len > room) {
    too_large_ = true;
    return false;
  }
  if (piece.empty()) return true;
  bool covered = ex_->resp.body.size() + piece.size() <= ex_->reserved;
  if (!covered && !client_.budget().fits(piece.size())) {
    stash_body_.assign(piece);
    paused_ = true;
    http_parser_pause(&parser_, 1);
    return true;
  }
  append_body(piece.data(), piece.size());
  return true;
}

void Connection::append_body(const char* data, size_t len) {
  uint64_t before = ex_->resp.body.size();
  ex_->resp.body.append(data, len);
  // Bytes past the reservation (a body without Content-Length has none) count as they come.
  if (ex_->resp.body.size() > ex_->reserved) {
    uint64_t past = ex_->resp.body.size() - std::max<uint64_t>(before, ex_->reserved);
    client_.budget().used += past;
    ex_->budget_held += past;
  }
  client_.body_grew(len);
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
