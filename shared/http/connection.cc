#include "shared/http/connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

namespace corral::http {
namespace {

constexpr size_t kHighWaterBytes = 4 << 20;  // unsent bytes above which reading stops
constexpr size_t kLowWaterBytes = 1 << 20;   // and below which it resumes
constexpr uint64_t kDrainPollMs = 5;         // uv::Stream has no drain event: poll
constexpr uint64_t kLingerMs = 2000;         // for the peer's EOF after our last answer
constexpr size_t kMaxUrlBytes = 0xffff;      // http_parser_url offsets are 16-bit

}  // namespace

Connection::Connection(uv_loop_t* loop, std::unique_ptr<uv::Stream> stream,
                       std::shared_ptr<const Handler> handler, const ServerOptions& opts,
                       OnClosed on_closed)
    : loop_(loop),
      stream_(std::move(stream)),
      timer_(loop),
      handler_(std::move(handler)),
      opts_(opts),
      on_closed_(std::move(on_closed)) {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
}

void Connection::start() {
  last_active_ = uv_now(loop_);
  arm_idle_timer(opts_.idle_timeout_ms);
  start_reading();
}

void Connection::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  reading_ = false;
  timer_.close();
  stream_->close();
  std::string().swap(pending_);
  OnClosed cb = std::move(on_closed_);
  on_closed_ = nullptr;
  if (cb) cb(this);  // may drop the Server's reference: every caller holds its own
}

void Connection::respond(uint64_t seq, Response&& r) {
  if (state_ != State::kAwaiting || seq != seq_) return;
  auto self = shared_from_this();
  send_response(r);
}

// ---- stream, timer and shutdown callbacks ----

void Connection::on_data(std::string_view bytes) noexcept {
  auto self = shared_from_this();
  last_active_ = uv_now(loop_);
  switch (state_) {
    case State::kReading:
      feed(bytes);
      return;
    case State::kAwaiting:
    case State::kBlocked:  // reading stopped on entering these states; keep what was in flight
      pending_.append(bytes);
      stop_reading();
      return;
    case State::kClosing:
    case State::kClosed:
      return;  // discarded
  }
}

void Connection::on_end(int uv_status) noexcept {
  auto self = shared_from_this();
  reading_ = false;  // uv::Stream stops reading when it reports the end
  if (uv_status != UV_EOF) {
    close();
    return;
  }
  peer_eof_ = true;
  if (state_ == State::kClosing) {
    if (shutdown_done_) close();
  } else if (state_ != State::kClosed) {
    begin_closing();  // the peer has said all it will; flush the answers already queued
  }
}

void Connection::on_shutdown(int uv_status) noexcept {
  if (state_ == State::kClosed) return;
  shutdown_done_ = true;
  if (uv_status != 0 || peer_eof_) close();
}

void Connection::on_timer() noexcept {
  auto self = shared_from_this();
  switch (state_) {
    case State::kReading:
    case State::kAwaiting:
      on_idle_tick();
      return;
    case State::kBlocked:
      on_drain_tick();
      return;
    case State::kClosing:
      on_linger_tick();
      return;
    case State::kClosed:
      return;
  }
}

void Connection::on_idle_tick() {
  uint64_t idle = opts_.idle_timeout_ms;
  if (state_ == State::kAwaiting) {  // the handler owns the clock while it holds a request
    arm_idle_timer(idle);
    return;
  }
  uint64_t quiet = uv_now(loop_) - last_active_;
  if (quiet >= idle) {
    close();
    return;
  }
  arm_idle_timer(idle - quiet);
}

void Connection::on_drain_tick() {
  size_t queued = stream_->queued_bytes();
  uint64_t now = uv_now(loop_);
  if (queued <= kLowWaterBytes) {
    state_ = State::kReading;
    last_active_ = now;
    arm_idle_timer(opts_.idle_timeout_ms);
    resume();
    return;
  }
  if (queued != last_queued_) {
    last_queued_ = queued;
    last_active_ = now;
    return;
  }
  uint64_t idle = opts_.idle_timeout_ms;
  if (idle != 0 && now - last_active_ >= idle) {
    spdlog::warn("http server: closing a connection that read none of its {} unsent bytes in {} ms",
                 queued, idle);
    close();
  }
}

void Connection::on_linger_tick() {
  size_t queued = stream_->queued_bytes();
  if (queued > 0 && queued != last_queued_) {  // still flushing our last answers
    last_queued_ = queued;
    return;
  }
  close();
}

// ---- parsing and answering ----

void Connection::feed(std::string_view data) {
  while (state_ == State::kReading && !data.empty()) {
    size_t n = http_parser_execute(&parser_, &kParserSettings, data.data(), data.size());
    bool stopped_early = n < data.size();
    data.remove_prefix(std::min(n, data.size()));
    http_errno err = HTTP_PARSER_ERRNO(&parser_);
    if (err == HPE_PAUSED) {  // on_message_complete paused: one whole request is ready
      http_parser_pause(&parser_, 0);
      dispatch();
    } else if (err != HPE_OK) {
      refuse(err);
      return;
    } else if (stopped_early) {
      return;  // an upgrade: the connection closes after its answer; the rest is not HTTP
    }
  }
  if (state_ == State::kAwaiting || state_ == State::kBlocked) {
    pending_.assign(data.data(), data.size());
    stop_reading();
  }
}

void Connection::dispatch() {
  state_ = State::kAwaiting;
  uint64_t seq = ++seq_;
  http_parser_url u;
  http_parser_url_init(&u);
  if (url_.size() > kMaxUrlBytes ||
      http_parser_parse_url(url_.data(), url_.size(), parser_.method == HTTP_CONNECT, &u) != 0) {
    keep_alive_ = false;
    send_response(Response::error(400, "malformed HTTP request: invalid URL"));
    return;
  }
  req_.method = http_method_str(static_cast<http_method>(parser_.method));
  if (u.field_set & (1 << UF_PATH)) {
    req_.path.assign(url_, u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
  } else {
    req_.path = "/";
  }
  if (u.field_set & (1 << UF_QUERY)) {
    req_.query.assign(url_, u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
  }

  in_dispatch_ = true;
  try {
    (*handler_)(std::move(req_), Responder(weak_from_this(), seq));
  } catch (const std::exception& e) {
    on_handler_failure(seq, e.what());
  } catch (...) {
    on_handler_failure(seq, "an exception that is not a std::exception");
  }
  in_dispatch_ = false;
}

void Connection::on_handler_failure(uint64_t seq, const char* what) {
  spdlog::error("http server: handler for {} {} threw: {}",
                http_method_str(static_cast<http_method>(parser_.method)), url_, what);
  respond(seq, Response::error(500, "internal server error"));
}

void Connection::refuse(http_errno err) {
  keep_alive_ = false;
  head_ = false;
  if (refusal_ == Refusal::kBodyTooLarge) {
    send_response(Response::error(
        413, "request body exceeds " + std::to_string(opts_.max_body_bytes) + " bytes"));
  } else if (refusal_ == Refusal::kHeadersTooLarge || err == HPE_HEADER_OVERFLOW) {
    send_response(Response::error(
        431, "request headers exceed " + std::to_string(opts_.max_header_bytes) + " bytes"));
  } else {
    send_response(Response::error(
        400, std::string("malformed HTTP request: ") + http_errno_description(err)));
  }
}

void Connection::send_response(const Response& r) {
  ConnectionHeader header = !keep_alive_ ? ConnectionHeader::kClose
                            : http10_    ? ConnectionHeader::kKeepAlive
                                         : ConnectionHeader::kNone;
  std::string wire;
  append_response(r, header, head_, wire);
  state_ = State::kReading;
  last_active_ = uv_now(loop_);
  if (Status s = stream_->write(std::move(wire)); !s) {
    close();
    return;
  }
  if (!keep_alive_) {
    begin_closing();
    return;
  }
  if (stream_->queued_bytes() > kHighWaterBytes) {
    state_ = State::kBlocked;
    stop_reading();
    last_queued_ = stream_->queued_bytes();
    arm_timer(kDrainPollMs, kDrainPollMs);
    return;
  }
  if (!in_dispatch_) resume();  // else feed() carries on once the handler returns
}

// Parses what arrived while the connection waited, then reads again.
void Connection::resume() {
  std::string data;
  data.swap(pending_);
  feed(data);
  if (state_ == State::kReading) start_reading();
}

void Connection::begin_closing() {
  state_ = State::kClosing;
  std::string().swap(pending_);
  struct ShutdownReq {
    uv_shutdown_t req;
    std::weak_ptr<Connection> connection;
  };
  auto* sr = new ShutdownReq{{}, weak_from_this()};
  sr->req.data = sr;
  int rc = uv_shutdown(&sr->req, stream_->raw(), [](uv_shutdown_t* req, int status) {
    std::unique_ptr<ShutdownReq> owned(static_cast<ShutdownReq*>(req->data));
    if (status == UV_ECANCELED) return;  // the stream closed first
    if (auto c = owned->connection.lock()) c->on_shutdown(status);
  });
  if (rc != 0) {
    delete sr;
    close();
    return;
  }
  // Keep reading (and discarding): closing a socket with unread input resets the connection,
  // and the peer could lose the answer we just queued.
  start_reading();
  last_queued_ = stream_->queued_bytes();
  arm_timer(kLingerMs, kLingerMs);
}

void Connection::start_reading() {
  if (reading_ || peer_eof_ || state_ == State::kClosed) return;
  Status s = stream_->start_read([this](std::string_view bytes) { on_data(bytes); },
                                 [this](int status) { on_end(status); });
  if (!s) {
    spdlog::warn("http server: {}", s.message());
    close();
    return;
  }
  reading_ = true;
}

void Connection::stop_reading() {
  if (!reading_) return;
  stream_->stop_read();
  reading_ = false;
}

void Connection::arm_timer(uint64_t timeout_ms, uint64_t repeat_ms) {
  timer_.start(timeout_ms, repeat_ms, [this] { on_timer(); });
}

void Connection::arm_idle_timer(uint64_t timeout_ms) {
  if (opts_.idle_timeout_ms == 0) {
    timer_.stop();
  } else {
    arm_timer(timeout_ms, 0);
  }
}

}  // namespace corral::http
