// Fuzz target: a WebSocket client's framing (shared/ws/framing.h) reading whatever a server
// sends after the handshake: frames of any length encoding, fragments, control frames between
// them, close frames with any code and reason, masked frames, reserved bits, text that is not
// UTF-8, and with permessage-deflate agreed, compressed messages that inflate to anything or to
// nothing.
//
// Input layout: byte 0 picks the size of the pieces fed (1 to 256 bytes); byte 1's high bit
// agrees to permessage-deflate, its other bits pick the largest message taken (64 bytes to
// 16 MiB); the rest is the server's bytes.
// Checks: every message is within max_message and every text message is UTF-8; nothing comes
// after an error or after the server's close; a close received has been answered; and the same
// bytes fed whole give the same messages, the same close and the same error (the framing
// context, freed between messages, loses nothing across pieces), but for wslay's check of a
// close reason's UTF-8, which depends on where the reads split the frame.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shared/ws/framing.h"
#include "tests/fuzz/check.h"

namespace {

using corral::ws::Framing;
using corral::ws::Kind;

struct Heard final : Framing::Peer {
  std::vector<std::pair<Kind, std::string>> messages;
  int closes = 0;
  uint16_t code = 0;
  bool ended = false;  // an error or a close was seen: nothing may follow
  void on_message(Kind kind, std::string_view data) override {
    FUZZ_CHECK(!ended);
    messages.emplace_back(kind, std::string(data));
  }
  void on_close_received(uint16_t c, std::string_view) override {
    FUZZ_CHECK(!ended);
    ++closes;
    code = c;
  }
};

struct Outcome {
  std::vector<std::pair<Kind, std::string>> messages;
  int closes = 0;
  uint16_t code = 0;
  std::string error;
};

Outcome feed(std::string_view bytes, size_t piece, uint64_t max_message, bool deflate) {
  Heard heard;
  Framing f(corral::ws::Role::kClient, max_message, heard);
  f.use_deflate(deflate);
  std::string out;
  Outcome o;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    std::string_view part = bytes.substr(at, piece);
    corral::Status s = f.feed(part.data(), part.size(), out);
    if (!s.is_ok()) {
      o.error = s.message();
      heard.ended = true;
      break;
    }
    if (f.close_received()) {
      FUZZ_CHECK(f.close_sent());  // answered at once
      heard.ended = true;
    }
  }
  for (const auto& [kind, data] : heard.messages) {
    FUZZ_CHECK(data.size() <= max_message);
    if (kind == Kind::kText) FUZZ_CHECK(corral::fuzz::valid_utf8(data));
  }
  o.messages = std::move(heard.messages);
  o.closes = heard.closes;
  o.code = heard.code;
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t piece = 1 + data[0];
  const bool deflate = (data[1] & 0x80) != 0;
  const uint64_t max_message = uint64_t{64} << ((data[1] & 0x7f) % 19);  // 64 B to 16 MiB
  std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  Outcome pieces = feed(bytes, piece, max_message, deflate);
  Outcome whole = feed(bytes, bytes.size() + 1, max_message, deflate);
  FUZZ_CHECK(pieces.messages == whole.messages);
  // wslay checks a close reason's UTF-8 per read, skipping the first two bytes of every read
  // (as if each held the code): a reason split across reads can be judged either way, so the
  // close is taken or refused (1007) depending on the pieces.
  const std::string close_utf8 = "the close frame's reason was not valid UTF-8 (closed 1007)";
  if (pieces.error == close_utf8 || whole.error == close_utf8) return 0;
  FUZZ_CHECK(pieces.closes == whole.closes);
  FUZZ_CHECK(pieces.code == whole.code);
  FUZZ_CHECK(pieces.error == whole.error);
  return 0;
}
