#include "shared/ipc/codec.h"

#include <array>

namespace corral::ipc {
namespace {

constexpr std::array<MessageInfo, 0
#define CORRAL_IPC_COUNT(name, value, sender, wire) +1
                     CORRAL_IPC_MESSAGES(CORRAL_IPC_COUNT)
#undef CORRAL_IPC_COUNT
                     >
    kMessages = {{
#define CORRAL_IPC_INFO(name, value, sender, wire) {MessageType::name, sender, wire},
        CORRAL_IPC_MESSAGES(CORRAL_IPC_INFO)
#undef CORRAL_IPC_INFO
    }};

uint32_t read_be32(const char* p) {
  auto b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

}  // namespace

const MessageInfo* find_message(uint8_t wire_type) {
  for (const auto& m : kMessages) {
    if (static_cast<uint8_t>(m.type) == wire_type) return &m;
  }
  return nullptr;
}

const MessageInfo& message_info(MessageType type) {
  const MessageInfo* m = find_message(static_cast<uint8_t>(type));
  if (m == nullptr) std::abort();  // an enum value outside the table: a build bug
  return *m;
}

std::string Payload::dump() const {
  if (json_ == nullptr) return text_;
  // A text that is not UTF-8 is sent with U+FFFD in place of its bad bytes rather than
  // making dump() throw: payloads that must keep bytes encode them first (shared/ipc/vars.h).
  if (json_->is_null()) return std::string();
  return json_->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::string> encode_payload(MessageType type, const Payload& payload) {
  std::string body = payload.dump();
  size_t length = body.size() + 1;
  if (length > kMaxFrameBytes) {
    return Status(Code::kResourceExhausted,
                  std::string(message_info(type).name) + " frame of " + std::to_string(length) +
                      " bytes exceeds the limit of " + std::to_string(kMaxFrameBytes));
  }
  std::string out;
  out.reserve(kHeaderBytes + body.size());
  out.push_back(static_cast<char>((length >> 24) & 0xff));
  out.push_back(static_cast<char>((length >> 16) & 0xff));
  out.push_back(static_cast<char>((length >> 8) & 0xff));
  out.push_back(static_cast<char>(length & 0xff));
  out.push_back(static_cast<char>(type));
  out += body;
  return out;
}

Status Decoder::feed(std::string_view bytes, std::vector<Frame>& out) {
  append(bytes);
  for (std::optional<Frame> f;;) {
    Status s = next(f);
    if (!s.is_ok() || !f) return s;
    out.push_back(std::move(*f));
  }
}

bool Decoder::has_frame() const {
  if (!error_.is_ok() || buf_.size() - pos_ < 4) return false;
  return buf_.size() - pos_ - 4 >= read_be32(buf_.data() + pos_);
}

Status Decoder::next(std::optional<Frame>& out) {
  out.reset();
  if (!error_.is_ok() || buf_.size() - pos_ < 4) return error_;
  const char* head = buf_.data() + pos_;
  uint32_t length = read_be32(head);
  if (length == 0 || length > max_frame_bytes_) {
    error_ = protocol_error("frame length " + std::to_string(length) + " outside 1.." +
                            std::to_string(max_frame_bytes_));
    return error_;
  }
  if (buf_.size() - pos_ < 4 + size_t{length}) return error_;
  auto wire_type = static_cast<uint8_t>(head[4]);
  auto frame = decode_one(wire_type, std::string_view(head + 5, length - 1));
  pos_ += 4 + size_t{length};
  // Compact once the consumed prefix dominates, so the buffer does not grow without bound.
  if (pos_ == buf_.size() || pos_ > buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  if (!frame) {
    error_ = frame.status();
    return error_;
  }
  out = std::move(*frame);
  return error_;
}

Result<Frame> Decoder::decode_one(uint8_t wire_type, std::string_view payload) {
  const MessageInfo* info = find_message(wire_type);
  if (info == nullptr) return protocol_error("unknown message type " + std::to_string(wire_type));
  if (info->sender == receiver_) {
    return protocol_error(std::string("message \"") + std::string(info->name) +
                          "\" may not be sent to this side");
  }
  nlohmann::json j =
      payload.empty() ? nlohmann::json::object() : nlohmann::json::parse(payload, nullptr, false);
  if (j.is_discarded()) {
    return protocol_error(std::string("\"") + std::string(info->name) +
                          "\" payload is not valid JSON");
  }
  if (!j.is_object()) {
    return protocol_error(std::string("\"") + std::string(info->name) +
                          "\" payload is not a JSON object");
  }
  return Frame{info->type, std::move(j)};
}

}  // namespace corral::ipc
