// One upgraded connection of corral-target's WebSocket routes (websocket.cc): an echo, with an
// optional push and close, or a peer that writes the bytes a test chose and reads nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shared/uv/stream.h"
#include "shared/uv/timer.h"
#include "shared/ws/framing.h"
#include "tools/target/target.h"

namespace corral::target {

class WsPeer final : public ws::Framing::Peer {
 public:
  struct Options {
    uint64_t push_ms = 0;                    // send {"seq": n} every push_ms
    uint64_t close_after = 0;                // close after this many messages (0: never)
    uint16_t close_code = ws::kCloseNormal;  // 0: a close frame with no code
    std::string raw;  // bytes to write after the 101 instead of speaking WebSocket
    bool deflate = false;  // permessage-deflate agreed
  };

  WsPeer(Target& target, uint64_t id, std::unique_ptr<uv::Stream> stream, Options opts)
      : target_(target),
        id_(id),
        stream_(std::move(stream)),
        opts_(std::move(opts)),
        framing_(ws::Role::kServer, 16u << 20, *this),
        push_(target.loop()) {
    framing_.use_deflate(opts_.deflate);
  }

  void start(const std::string& rest) {
    Status s =
        stream_->start_read([this](std::string_view b) { on_data(b); }, [this](int) { gone(); });
    if (!s) {
      gone();
      return;
    }
    if (!opts_.raw.empty()) {
      (void)stream_->write(opts_.raw);
      return;
    }
    if (opts_.push_ms > 0) push_.start(opts_.push_ms, opts_.push_ms, [this] { push(); });
    if (!rest.empty()) on_data(rest);
  }

  void close() {
    push_.close();
    stream_->close();
  }

 private:
  void on_data(std::string_view bytes) {
    if (!opts_.raw.empty() || done_) return;  // a raw peer reads and discards
    Status s = framing_.feed(bytes.data(), bytes.size(), out_);
    flush();
    if (!s.is_ok() || framing_.close_received()) finish();
  }

  void on_message(ws::Kind kind, std::string_view data) override {
    target_.count_ws_message();
    framing_.send(kind, data, out_);
    if (opts_.close_after > 0 && ++count_ >= opts_.close_after) {
      framing_.close(opts_.close_code, opts_.close_code != 0 ? "enough" : "", out_);
    }
  }

  void on_close_received(uint16_t, std::string_view) override {}
  void on_ping(std::string_view) override { target_.count_ws_ping(); }

  void push() {
    framing_.send(ws::Kind::kText, "{\"seq\":" + std::to_string(++pushed_) + "}", out_);
    flush();
  }

  void flush() {
    if (out_.empty()) return;
    (void)stream_->write(std::move(out_));
    out_.clear();
  }

  // The close handshake is done (or the peer broke the protocol): the server ends TCP first.
  void finish() {
    done_ = true;
    push_.stop();
    stream_->shutdown([this] { gone(); });
  }

  void gone() { target_.forget_ws(id_); }

  Target& target_;
  uint64_t id_;
  std::unique_ptr<uv::Stream> stream_;
  Options opts_;
  ws::Framing framing_;
  uv::Timer push_;
  std::string out_;
  uint64_t count_ = 0;
  uint64_t pushed_ = 0;
  bool done_ = false;
};

}  // namespace corral::target
