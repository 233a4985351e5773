// Fuzz target: the IPC frame decoder (shared/ipc/codec.h), on both sides of the pipe.
//
// Input layout:
//   byte 0            k = byte0 % 16: how many split sizes follow
//   bytes 1..k        split sizes, each 0..255 bytes (0 feeds an empty piece)
//   the rest          the byte stream, fed in pieces of those sizes, cycling through them
//                     (k = 0, or every size 0: the stream in one piece)
//
// For each receiver (master, worker), checks that:
// - feeding the stream in pieces gives the same frames and the same status as feeding it whole;
// - an error poisons the decoder: a later feed returns the same error and no frame;
// - buffered() never exceeds the bytes fed so far;
// - every decoded frame re-encodes to bytes that decode back to one equal frame.
// A broken check aborts, which libFuzzer reports as a crash.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shared/ipc/codec.h"
#include "tests/fuzz/check.h"

namespace {

using corral::Status;
using corral::ipc::Decoder;
using corral::ipc::Frame;
using corral::ipc::Sender;

bool same_frames(const std::vector<Frame>& a, const std::vector<Frame>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].type != b[i].type || a[i].payload != b[i].payload) return false;
  }
  return true;
}

void check_round_trip(const Frame& frame, Sender receiver) {
  FUZZ_CHECK(frame.payload.is_object());
  auto bytes = corral::ipc::encode(frame.type, frame.payload);
  if (!bytes) {
    // Re-encoding may only fail for size: compact JSON of a huge payload.
    FUZZ_CHECK(bytes.status().code() == corral::Code::kResourceExhausted);
    return;
  }
  Decoder again(receiver);
  std::vector<Frame> out;
  Status s = again.feed(*bytes, out);
  FUZZ_CHECK(s.is_ok());
  FUZZ_CHECK(out.size() == 1);
  FUZZ_CHECK(out[0].type == frame.type);
  FUZZ_CHECK(out[0].payload == frame.payload);
  FUZZ_CHECK(again.buffered() == 0);
}

void check_receiver(Sender receiver, std::string_view sizes, std::string_view stream) {
  Decoder whole(receiver);
  std::vector<Frame> whole_frames;
  Status whole_status = whole.feed(stream, whole_frames);
  FUZZ_CHECK(whole.buffered() <= stream.size());

  Decoder pieces(receiver);
  std::vector<Frame> piece_frames;
  Status piece_status;
  size_t pos = 0, next_size = 0;
  do {
    size_t n = sizes.empty() ? stream.size() : static_cast<uint8_t>(sizes[next_size]);
    if (!sizes.empty()) next_size = (next_size + 1) % sizes.size();
    n = std::min(n, stream.size() - pos);
    size_t before = piece_frames.size();
    Status s = pieces.feed(stream.substr(pos, n), piece_frames);
    pos += n;
    FUZZ_CHECK(pieces.buffered() <= pos);
    if (!piece_status.is_ok()) {
      // Poisoned: the same error again, and nothing more delivered.
      FUZZ_CHECK(s.code() == piece_status.code() && s.message() == piece_status.message());
      FUZZ_CHECK(piece_frames.size() == before);
    }
    piece_status = s;
  } while (pos < stream.size());

  FUZZ_CHECK(same_frames(whole_frames, piece_frames));
  FUZZ_CHECK(whole_status.code() == piece_status.code());
  FUZZ_CHECK(whole_status.message() == piece_status.message());
  if (!whole_status.is_ok()) {
    FUZZ_CHECK(whole_status.code() == corral::Code::kProtocol);
    std::vector<Frame> more;
    Status again = whole.feed(std::string_view("\0\0\0\1\3", 5), more);
    FUZZ_CHECK(!again.is_ok() && more.empty());
  }
  for (const Frame& f : whole_frames) check_round_trip(f, receiver);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t k = std::min<size_t>(static_cast<uint8_t>(input[0]) % 16, size - 1);
  std::string_view sizes = input.substr(1, k);
  if (sizes.find_first_not_of('\0') == std::string_view::npos) sizes = {};  // no progress
  std::string_view stream = input.substr(1 + k);
  check_receiver(Sender::kMaster, sizes, stream);
  check_receiver(Sender::kWorker, sizes, stream);
  return 0;
}
