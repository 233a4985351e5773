// Encoding and decoding of IPC frames (the layout is described in shared/ipc/protocol.h).
// Pure code: no I/O, no loop. Any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/ipc/protocol.h"
#include "shared/status.h"

namespace corral::ipc {

struct Frame {
  MessageType type;
  nlohmann::json payload;  // always an object
};

// One complete frame as bytes. Fails (Code::kResourceExhausted) when the frame would exceed
// kMaxFrameBytes; the caller has then a bug or an oversized batch to split. Never throws: text
// in `payload` that is not UTF-8 goes out with U+FFFD in place of each bad byte.
Result<std::string> encode(MessageType type, const nlohmann::json& payload);

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
  // Bytes of an incomplete frame still held.
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  Status decode_one(uint8_t wire_type, std::string_view payload, std::vector<Frame>& out);

  Sender receiver_;
  uint32_t max_frame_bytes_;
  std::string buf_;
  size_t pos_ = 0;
  Status error_;
};

}  // namespace corral::ipc
