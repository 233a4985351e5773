#include "shared/http/connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

namespace corral::http {
namespace {

using Event = RequestParser::Event;
using Phase = RequestParser::Phase;

constexpr size_t kHighWaterBytes = 4 << 20;  // unsent bytes above which reading stops
constexpr size_t kLowWaterBytes = 1 << 20;   // and below which it resumes
constexpr uint64_t kDrainPollMs = 5;         // uv::Stream has no drain event: poll
constexpr uint64_t kLingerMs = 2000;         // for the peer's EOF after our last answer
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

ParseLimits limits_of(const ServerOptions& opts) {
  return ParseLimits{opts.max_header_bytes, opts.max_header_count, opts.max_body_bytes};
}

// `since` + `timeout_ms` on the uv_now() clock, or 0 (never) when the timeout is off.
uint64_t deadline(uint64_t since, uint64_t timeout_ms) {
  return timeout_ms == 0 ? 0 : since + timeout_ms;
}

uint64_t earliest(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return std::max(a, b);
  return std::min(a, b);
}

}  // namespace

Connection::Connection(uv_loop_t* loop, std::unique_ptr<uv::Stream> stream,
                       std::shared_ptr<const Handler> handler, const ServerOptions& opts,
                       Transport transport, std::string peer, OnClosed on_closed)
    : loop_(loop),
      stream_(std::move(stream)),
      timer_(loop),
      handler_(std::move(handler)),
      opts_(opts),
      transport_(transport),
      peer_(std::move(peer)),
      on_closed_(std::move(on_closed)),
      parser_(limits_of(opts)) {}

void Connection::start() {
  request_began_ = idle_since_ = uv_now(loop_);
  arm_read_timer();
  start_reading();
}

void Connection::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  reading_ = false;
  timer_.close();
  if (stream_) stream_->close();
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

bool Connection::idle() const {
  return state_ == State::kReading && stream_ && seq_ > 0 && parser_.phase() == Phase::kIdle &&
         stream_->queued_bytes() == 0;
}

// ---- stream, timer and shutdown callbacks ----

void Connection::on_data(std::string_view bytes) noexcept {
  auto self = shared_from_this();
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
    case State::kUpgraded:
      return;  // discarded (an upgraded connection reads no more)
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
      on_read_tick();
      return;
    case State::kAwaiting:
    case State::kUpgraded:
      return;  // the handler owns the clock while it holds a request; its answer re-arms
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

void Connection::on_read_tick() {
  uint64_t due = read_deadline();
  uint64_t now = uv_now(loop_);
  if (due == 0) return;
  if (now < due) {
    arm_timer(due - now, 0);
    return;
  }
  switch (parser_.phase()) {
    case Phase::kIdle:
      close();  // nothing to answer; nginx too closes without a word
      return;
    case Phase::kHeaders:
      refuse(408, "request headers not received within " + std::to_string(opts_.header_timeout_ms) +
                      " ms");
      return;
    case Phase::kBody:
      refuse(408,
             "request body not received within " + std::to_string(opts_.body_timeout_ms) + " ms");
      return;
  }
}

void Connection::on_drain_tick() {
  size_t queued = stream_->queued_bytes();
  uint64_t now = uv_now(loop_);
  if (queued <= kLowWaterBytes) {
    state_ = State::kReading;
    idle_since_ = now;
    arm_read_timer();
    resume();
    return;
  }
  if (queued != last_queued_) {
    last_queued_ = queued;
    drain_progress_ = now;
    return;
  }
  uint64_t idle = opts_.idle_timeout_ms;
  if (idle != 0 && now - drain_progress_ >= idle) {
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
  while (state_ == State::kReading) {
    bool was_idle = parser_.phase() == Phase::kIdle;
    RequestParser::Step step = parser_.feed(data);
    data.remove_prefix(step.consumed);
    // The first request's clock started at the accept; a later one's starts with its first byte.
    if (was_idle && parser_.phase() != Phase::kIdle && seq_ > 0) request_began_ = uv_now(loop_);
    switch (step.event) {
      case Event::kNeedMore:
        arm_read_timer();  // the phase may have changed; the deadline moves only with it
        return;
      case Event::kHeaders:
        on_headers();
        break;
      case Event::kRequest:
        dispatch();
        break;
      case Event::kRefused:
        refuse(parser_.refusal().status, parser_.refusal().message);
        return;
    }
  }
  if (state_ == State::kAwaiting || state_ == State::kBlocked) {
    pending_.assign(data.data(), data.size());
    stop_reading();
  }
  if (state_ == State::kUpgraded) hand_over(std::string(data));
}

void Connection::on_headers() {
  headers_done_ = uv_now(loop_);
  if (parser_.expects_continue()) (void)stream_->write(std::string(kContinue));
}

void Connection::dispatch() {
  state_ = State::kAwaiting;
  timer_.stop();
  uint64_t seq = ++seq_;
  keep_alive_ = parser_.keep_alive();
  http10_ = parser_.http10();
  head_ = parser_.head();
  Request& req = parser_.request();
  req.transport = transport_;
  req.peer = peer_;

  in_dispatch_ = true;
  try {
    (*handler_)(std::move(req), Responder(weak_from_this(), seq));
  } catch (const std::exception& e) {
    on_handler_failure(seq, e.what());
  } catch (...) {
    on_handler_failure(seq, "an exception that is not a std::exception");
  }
  in_dispatch_ = false;
}

void Connection::on_handler_failure(uint64_t seq, const char* what) {
  spdlog::error("http server: handler for {} {} threw: {}", parser_.method(), parser_.url(), what);
  respond(seq, Response::error(500, "internal server error"));
}

// Answers a request the server will not hand over, and closes the connection after it.
void Connection::refuse(int status, std::string message) {
  keep_alive_ = false;
  head_ = false;
  send_response(Response::error(status, std::move(message)));
}

void Connection::send_response(const Response& r) {
  if (r.upgrade && r.status == 101) {
    switch_protocols(r);
    return;
  }
  ConnectionHeader header = !keep_alive_ ? ConnectionHeader::kClose
                            : http10_    ? ConnectionHeader::kKeepAlive
                                         : ConnectionHeader::kNone;
  std::string wire;
  append_response(r, header, head_, wire);
  state_ = State::kReading;
  idle_since_ = uv_now(loop_);
  answered_ns_ = uv_hrtime();
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
    drain_progress_ = idle_since_;
    arm_timer(kDrainPollMs, kDrainPollMs);
    return;
  }
  arm_read_timer();
  if (!in_dispatch_) resume();  // else feed() carries on once the handler returns
}

// A 101: its head goes out, and the stream goes to the new protocol's owner with what was read
// past the request (now, or once the handler that answered inside dispatch() has returned).
void Connection::switch_protocols(const Response& r) {
  std::string wire;
  append_response(r, ConnectionHeader::kNone, false, wire);
  if (Status s = stream_->write(std::move(wire)); !s) {
    close();
    return;
  }
  state_ = State::kUpgraded;
  upgrade_ = r.upgrade;
  stop_reading();
  timer_.stop();
  if (!in_dispatch_) hand_over(std::move(pending_));
}

void Connection::hand_over(std::string rest) {
  auto upgrade = std::move(upgrade_);
  std::unique_ptr<uv::Stream> stream = std::move(stream_);  // close() leaves it open
  close();
  upgrade(std::move(stream), std::move(rest));
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

// When the parser's current wait runs out (uv_now() clock), or 0 for never.
uint64_t Connection::read_deadline() const {
  switch (parser_.phase()) {
    case Phase::kIdle: {
      uint64_t idle = deadline(idle_since_, opts_.idle_timeout_ms);
      if (seq_ > 0) return idle;
      return earliest(idle, deadline(request_began_, opts_.header_timeout_ms));  // both from accept
    }
    case Phase::kHeaders:
      return deadline(request_began_, opts_.header_timeout_ms);
    case Phase::kBody:
      return deadline(headers_done_, opts_.body_timeout_ms);
  }
  return 0;
}

void Connection::arm_read_timer() {
  uint64_t due = read_deadline();
  if (due == 0) {
    timer_.stop();
    return;
  }
  uint64_t now = uv_now(loop_);
  arm_timer(due > now ? due - now : 0, 0);
}

void Connection::arm_timer(uint64_t timeout_ms, uint64_t repeat_ms) {
  timer_.start(timeout_ms, repeat_ms, [this] { on_timer(); });
}

}  // namespace corral::http
