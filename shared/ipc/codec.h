// Encoding and decoding of IPC frames (the layout is described in shared/ipc/protocol.h).
// Pure code: no I/O, no loop. Any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/ipc/protocol.h"
#include "shared/status.h"

namespace corral::ipc {

struct Frame {
  MessageType type;
  nlohmann::json payload;  // always an object
};

// A frame's payload: a JSON object, or the text of one already written (the frames that move
// instances in bulk are written as text: StartWriter, control.h). Holds the JSON by reference:
// it lives no longer than the JSON it was made from, like a string_view.
class Payload {
 public:
  explicit Payload(const nlohmann::json& object) : json_(&object) {}
  static Payload text(std::string written) {
    Payload p;
    p.text_ = std::move(written);
    return p;
  }
  // The JSON, parsed from the text when it is text (what tests look at).
  nlohmann::json json() const { return json_ != nullptr ? *json_ : nlohmann::json::parse(text_); }
  // The bytes that go on the wire. Never throws: a text in a JSON payload that is not UTF-8 goes
  // out with U+FFFD in place of each bad byte.
  std::string dump() const;

 private:
  Payload() = default;
  const nlohmann::json* json_ = nullptr;  // none: the payload is text_
  std::string text_;
};

// One complete frame as bytes. Fails (Code::kResourceExhausted) when the frame would exceed
// kMaxFrameBytes; the caller has then a bug or an oversized batch to split.
Result<std::string> encode_payload(MessageType type, const Payload& payload);
inline Result<std::string> encode(MessageType type, const nlohmann::json& payload) {
  return encode_payload(type, Payload(payload));
}

// Reassembles frames from a byte stream that arrives in arbitrary pieces.
//
// After the first error the decoder is poisoned: the stream has lost its framing and every
// later feed() returns the same error. `receiver` says which side decodes, so a frame of a type
// only this side sends is rejected as a protocol error.
class Decoder {
 public:
  explicit Decoder(Sender receiver, uint32_t max_frame_bytes = kMaxFrameBytes)
      : receiver_(receiver), max_frame_bytes_(max_frame_bytes) {}

  // Appends `bytes` and moves every complete frame into `out`. Frames before an error are
  // still delivered.
  Status feed(std::string_view bytes, std::vector<Frame>& out);
  // Appends `bytes` and decodes nothing: next() does, a frame at a time, so that a reader that
  // handles frames in slices (the master's end of a worker's pipe) parses only what it handles.
  void append(std::string_view bytes) { buf_.append(bytes.data(), bytes.size()); }
  // The next complete frame, or none while its bytes are still incomplete; an error as feed's.
  Status next(std::optional<Frame>& out);
  // Whether a complete frame is buffered (and not decoded yet).
  bool has_frame() const;
  // Bytes held: complete frames not decoded yet, and the start of an incomplete one.
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  Result<Frame> decode_one(uint8_t wire_type, std::string_view payload);

  Sender receiver_;
  uint32_t max_frame_bytes_;
  std::string buf_;
  size_t pos_ = 0;
  Status error_;
};

}  // namespace corral::ipc
