#include "shared/ws/framing.h"

#include <openssl/rand.h>
#include <wslay/wslay.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "shared/text/utf8.h"
#include "shared/ws/deflate.h"

namespace corral::ws {

// wslay's user data: the Framing a context serves now changes as the context is reused.
struct Context {
  wslay_event_context* wslay = nullptr;
  Framing* framing = nullptr;

  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() {
    if (wslay != nullptr) wslay_event_context_free(wslay);
  }
};

namespace {

// The thread's idle contexts (framing.h), per role.
struct Spares {
  std::vector<std::unique_ptr<Context>> of[2];
};
thread_local Spares spares;

size_t role_index(Role role) { return role == Role::kClient ? 0 : 1; }

}  // namespace

// wslay's callbacks, with the Context as their user data.
struct FramingCallbacks {
  static ssize_t recv(wslay_event_context_ptr ctx, uint8_t* buf, size_t len, int /*flags*/,
                      void* self) {
    auto* f = static_cast<Context*>(self)->framing;
    if (f->in_left_ == 0) {
      wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
      return -1;
    }
    size_t n = std::min(len, f->in_left_);
    std::memcpy(buf, f->in_, n);
    f->in_ += n;
    f->in_left_ -= n;
    f->taken_ += n;
    return static_cast<ssize_t>(n);
  }

  static ssize_t send(wslay_event_context_ptr ctx, const uint8_t* data, size_t len, int /*flags*/,
                      void* self) {
    auto* f = static_cast<Context*>(self)->framing;
    if (f->out_ == nullptr) {
      wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
      return -1;
    }
    f->out_->append(reinterpret_cast<const char*>(data), len);
    return static_cast<ssize_t>(len);
  }

  // Masking keys come from OpenSSL's generator (RFC 6455 5.3: unpredictable), drawn 4 KB at a
  // time: one RAND_bytes call for a thousand frames rather than one per frame (each call
  // checks for a fork with a getpid() system call).
  static int genmask(wslay_event_context_ptr /*ctx*/, uint8_t* buf, size_t len, void* /*self*/) {
    thread_local std::array<uint8_t, 4096> pool;
    thread_local size_t used = pool.size();
    if (len > pool.size()) return RAND_bytes(buf, static_cast<int>(len)) == 1 ? 0 : -1;
    if (pool.size() - used < len) {
      if (RAND_bytes(pool.data(), static_cast<int>(pool.size())) != 1) return -1;
      used = 0;
    }
    std::memcpy(buf, pool.data() + used, len);
    std::memset(pool.data() + used, 0, len);  // each key is handed out once
    used += len;
    return 0;
  }

  // The bytes of the frame begun: its header (as wslay accepts it, the shortest length
  // encoding; a client's frames are masked) and its payload.
  static void frame_start(wslay_event_context_ptr /*ctx*/,
                          const wslay_event_on_frame_recv_start_arg* arg, void* self) {
    auto* f = static_cast<Context*>(self)->framing;
    uint64_t n = arg->payload_length;
    uint64_t header = 2 + (n < 126 ? 0 : n < 65536 ? 2 : 8) + (f->role_ == Role::kServer ? 4 : 0);
    f->frame_bytes_ = header + n;
    f->last_opcode_ = arg->opcode;
    if (arg->opcode == WSLAY_TEXT_FRAME || arg->opcode == WSLAY_BINARY_FRAME ||
        arg->opcode == WSLAY_CONTINUATION_FRAME) {
      f->mid_message_ = arg->fin == 0;
    }
  }

  static void frame_end(wslay_event_context_ptr /*ctx*/, void* self) {
    auto* f = static_cast<Context*>(self)->framing;
    f->ended_ += f->frame_bytes_;
    f->frame_bytes_ = 0;
  }

  static void message(wslay_event_context_ptr /*ctx*/, const wslay_event_on_msg_recv_arg* arg,
                      void* self) {
    auto* f = static_cast<Context*>(self)->framing;
    if (!f->complaint_.empty()) return;  // closing for an earlier message
    std::string_view data(reinterpret_cast<const char*>(arg->msg), arg->msg_length);
    if (wslay_get_rsv1(arg->rsv) != 0) {  // wslay allows it on data messages, with deflate only
      f->inflate(arg->opcode == WSLAY_TEXT_FRAME ? Kind::kText : Kind::kBinary, data);
      return;
    }
    switch (arg->opcode) {
      case WSLAY_TEXT_FRAME:
        f->peer_.on_message(Kind::kText, data);
        break;
      case WSLAY_BINARY_FRAME:
        f->peer_.on_message(Kind::kBinary, data);
        break;
      case WSLAY_PONG:
        f->peer_.on_pong(data);
        break;
      case WSLAY_CONNECTION_CLOSE:
        f->close_received_ = true;
        f->code_received_ = arg->status_code != 0 ? arg->status_code : kCloseNoStatus;
        f->peer_.on_close_received(f->code_received_, data.size() >= 2 ? data.substr(2) : "");
        break;
      case WSLAY_PING:
        f->peer_.on_ping(data);  // wslay has queued its pong
        break;
      default:
        break;
    }
  }

  static constexpr wslay_event_callbacks kAll = {recv,    send,      genmask, frame_start,
                                                 nullptr, frame_end, message};
};

Framing::Framing(Role role, uint64_t max_message, Peer& peer)
    : role_(role), max_message_(max_message), peer_(peer) {}

Framing::~Framing() { delete ctx_; }

// A spare context of the thread, or a new one.
bool Framing::ensure() {
  if (ctx_ != nullptr) return true;
  auto& idle = spares.of[role_index(role_)];
  std::unique_ptr<Context> c;
  if (!idle.empty()) {
    c = std::move(idle.back());
    idle.pop_back();
  } else {
    c = std::make_unique<Context>();
    int rv = role_ == Role::kClient
                 ? wslay_event_context_client_init(&c->wslay, &FramingCallbacks::kAll, c.get())
                 : wslay_event_context_server_init(&c->wslay, &FramingCallbacks::kAll, c.get());
    if (rv != 0) {
      c->wslay = nullptr;
      return false;
    }
  }
  c->framing = this;
  ctx_ = c.release();
  wslay_event_config_set_max_recv_msg_length(ctx_->wslay, max_message_);
  wslay_event_config_set_allowed_rsv_bits(ctx_->wslay, deflate_ ? WSLAY_RSV1_BIT : WSLAY_RSV_NONE);
  // A context taken again after this side's close went out must not send anything more (wslay
  // would answer the peer's close with a second one).
  if (close_sent_) wslay_event_shutdown_write(ctx_->wslay);
  return true;
}

Status Framing::feed(const char* data, size_t n, std::string& out) {
  if (n == 0 || close_received_) return Status::ok();
  if (!ensure()) return {Code::kResourceExhausted, "out of memory for a WebSocket context"};
  in_ = data;
  in_left_ = n;
  feeding_ = true;  // a Peer callback may send: the context must outlive wslay_event_recv
  int rv = wslay_event_recv(ctx_->wslay);
  feeding_ = false;
  in_ = nullptr;
  in_left_ = 0;
  flush(out);
  Status s = broken();
  if (s.is_ok() && rv != 0)
    s = protocol_error("WebSocket frames could not be read (wslay error " + std::to_string(rv) +
                       ")");
  release_if_idle();
  return s;
}

void Framing::send(Kind kind, std::string_view data, std::string& out) {
  if (close_sent_ || !ensure()) return;
  const auto opcode =
      static_cast<uint8_t>(kind == Kind::kText ? WSLAY_TEXT_FRAME : WSLAY_BINARY_FRAME);
  if (deflate_) {
    thread_local std::string packed;
    packed.clear();
    deflate_message(data, packed);
    wslay_event_msg m{opcode, reinterpret_cast<const uint8_t*>(packed.data()), packed.size()};
    wslay_event_queue_msg_ex(ctx_->wslay, &m, WSLAY_RSV1_BIT);  // wslay copies the bytes
    if (packed.capacity() > (1u << 20)) std::string().swap(packed);
  } else {
    wslay_event_msg m{opcode, reinterpret_cast<const uint8_t*>(data.data()), data.size()};
    wslay_event_queue_msg(ctx_->wslay, &m);
  }
  flush(out);
  release_if_idle();
}

void Framing::ping(std::string_view data, std::string& out) {
  if (close_sent_ || !ensure()) return;
  wslay_event_msg m{WSLAY_PING, reinterpret_cast<const uint8_t*>(data.data()),
                    std::min<size_t>(data.size(), 125)};
  wslay_event_queue_msg(ctx_->wslay, &m);
  flush(out);
  release_if_idle();
}

void Framing::close(uint16_t code, std::string_view reason, std::string& out) {
  if (close_sent_ || !ensure()) return;
  closing_ourselves_ = true;
  reason = reason.substr(0, 123);
  wslay_event_queue_close(ctx_->wslay, code, reinterpret_cast<const uint8_t*>(reason.data()),
                          reason.size());
  flush(out);
  release_if_idle();
}

void Framing::flush(std::string& out) {
  out_ = &out;
  wslay_event_send(ctx_->wslay);
  out_ = nullptr;
  if (wslay_event_get_close_sent(ctx_->wslay) != 0 && !close_sent_) {
    close_sent_ = true;
    code_sent_ = wslay_event_get_status_code_sent(ctx_->wslay);
  }
}

bool Framing::inflate(Kind kind, std::string_view data) {
  // The thread's buffer, taken for this message: a Peer that made another Framing inflate
  // before on_message returned would find it taken and use a buffer of its own.
  thread_local std::string spare;
  std::string plain = std::move(spare);
  std::string why;
  switch (inflate_message(data, max_message_, plain, why)) {
    case InflateResult::kBadData:
      complain(kCloseInvalidData,
               "a compressed message did not inflate: " + why + " (closed 1007)");
      return false;
    case InflateResult::kTooBig:
      complain(kCloseTooBig, "a compressed message inflated past max_message, " +
                                 std::to_string(max_message_) + " bytes (closed 1009)");
      return false;
    case InflateResult::kOk:
      break;
  }
  if (kind == Kind::kText && !text::is_utf8(plain)) {
    complain(kCloseInvalidData, "a compressed text message was not valid UTF-8 (closed 1007)");
    return false;
  }
  peer_.on_message(kind, plain);
  if (plain.capacity() <= (1u << 20)) spare = std::move(plain);
  return true;
}

// Inside wslay_event_recv: the close is queued, and feed() writes it and reports `words`.
void Framing::complain(uint16_t code, std::string words) {
  complaint_ = std::move(words);
  wslay_event_queue_close(ctx_->wslay, code, nullptr, 0);
}

// A close corral did not ask for and that answers none: wslay's complaint about the peer, or
// corral's about a compressed message.
Status Framing::broken() const {
  if (!complaint_.empty()) return protocol_error(complaint_);
  if (!close_sent_ || closing_ourselves_ || close_received_) return Status::ok();
  switch (code_sent_) {
    case kCloseInvalidData:
      if (last_opcode_ == WSLAY_CONNECTION_CLOSE) {
        return protocol_error("the close frame's reason was not valid UTF-8 (closed 1007)");
      }
      return protocol_error("a text message was not valid UTF-8 (closed 1007)");
    case kCloseTooBig:
      return protocol_error("a message was larger than max_message, " +
                            std::to_string(max_message_) + " bytes (closed 1009)");
    default:
      if (last_opcode_ == WSLAY_CONNECTION_CLOSE) {
        return protocol_error("the close frame carried an invalid code (closed 1002)");
      }
      return protocol_error("a frame broke the WebSocket protocol (closed " +
                            std::to_string(code_sent_) + ")");
  }
}

// Between frames, with nothing to write, the context holds nothing worth its 4 KB input
// buffer: it goes (let_go), and the next call takes one again. So too once a close went out
// (thousands of sockets closed in one turn, at the end of a load test, would otherwise each keep
// one until the peer answers).
void Framing::release_if_idle() {
  if (ctx_ == nullptr || feeding_ || taken_ != ended_ || mid_message_ ||
      wslay_event_want_write(ctx_->wslay) != 0) {
    return;
  }
  let_go();
}

void Framing::let_go() {
  std::unique_ptr<Context> c(ctx_);
  ctx_ = nullptr;
  c->framing = nullptr;
  auto& idle = spares.of[role_index(role_)];
  const bool clean = !close_sent_ && !close_received_ && complaint_.empty() &&
                     wslay_event_get_read_enabled(c->wslay) != 0 &&
                     wslay_event_get_write_enabled(c->wslay) != 0;
  if (clean && idle.size() < kSpares) idle.push_back(std::move(c));
}

}  // namespace corral::ws
