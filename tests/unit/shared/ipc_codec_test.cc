#include <catch2/catch.hpp>

#include "shared/ipc/codec.h"

using corral::Code;
using corral::ipc::Decoder;
using corral::ipc::encode;
using corral::ipc::Frame;
using corral::ipc::MessageType;
using corral::ipc::Sender;

namespace {

std::string raw_frame(uint32_t length, uint8_t type, const std::string& payload) {
  std::string s;
  s.push_back(char(length >> 24));
  s.push_back(char(length >> 16));
  s.push_back(char(length >> 8));
  s.push_back(char(length));
  s.push_back(char(type));
  return s + payload;
}

}  // namespace

TEST_CASE("ipc codec: a frame round-trips whole, and when fed one byte at a time") {
  auto bytes = encode(MessageType::kHeartbeat, {{"seq", 7}, {"rss_bytes", 1234}});
  REQUIRE(bytes.is_ok());
  CHECK(bytes->size() ==
        corral::ipc::kHeaderBytes + std::string(R"({"rss_bytes":1234,"seq":7})").size());

  Decoder whole(Sender::kMaster);
  std::vector<Frame> out;
  REQUIRE(whole.feed(*bytes + *bytes, out).is_ok());
  REQUIRE(out.size() == 2);
  CHECK(out[0].type == MessageType::kHeartbeat);
  CHECK(out[1].payload["seq"] == 7);

  Decoder bytewise(Sender::kMaster);
  std::vector<Frame> out2;
  for (char c : *bytes) REQUIRE(bytewise.feed(std::string_view(&c, 1), out2).is_ok());
  REQUIRE(out2.size() == 1);
  CHECK(out2[0].payload["rss_bytes"] == 1234);
  CHECK(bytewise.buffered() == 0);
}

TEST_CASE("ipc codec: an empty payload decodes as an empty object") {
  auto bytes = encode(MessageType::kReady, nullptr);
  REQUIRE(bytes.is_ok());
  CHECK(bytes->size() == 5);
  Decoder d(Sender::kMaster);
  std::vector<Frame> out;
  REQUIRE(d.feed(*bytes, out).is_ok());
  REQUIRE(out.size() == 1);
  CHECK(out[0].payload.is_object());
  CHECK(out[0].payload.empty());
}

TEST_CASE("ipc codec: garbage and oversized frames are protocol errors that poison the stream") {
  struct Case {
    const char* what;
    std::string bytes;
    const char* message_part;
  };
  const Case cases[] = {
      {"zero length", raw_frame(0, 3, ""), "frame length 0"},
      {"oversized length", raw_frame(corral::ipc::kMaxFrameBytes + 1, 3, ""), "outside"},
      {"all ones", std::string("\xff\xff\xff\xff garbage", 12), "frame length 4294967295"},
      {"unknown type", raw_frame(3, 200, "{}"), "unknown message type 200"},
      {"not JSON", raw_frame(4, 4, "{{{"), "not valid JSON"},
      {"JSON but not an object", raw_frame(4, 4, "[1]"), "not a JSON object"},
      {"master-only type sent to the master", raw_frame(3, 2, "{}"), "may not be sent"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    Decoder d(Sender::kMaster);
    std::vector<Frame> out;
    auto s = d.feed(c.bytes, out);
    CHECK(s.code() == Code::kProtocol);
    CHECK_THAT(s.message(), Catch::Contains(c.message_part));
    CHECK(out.empty());
    auto good = encode(MessageType::kReady, {});
    CHECK_FALSE(d.feed(*good, out).is_ok());  // poisoned: framing is lost for good
    CHECK(out.empty());
  }
}

TEST_CASE("ipc codec: frames before a bad one are still delivered") {
  auto good = encode(MessageType::kReady, {});
  Decoder d(Sender::kMaster);
  std::vector<Frame> out;
  auto s = d.feed(*good + raw_frame(3, 99, "{}"), out);
  CHECK_FALSE(s.is_ok());
  REQUIRE(out.size() == 1);
  CHECK(out[0].type == MessageType::kReady);
}

TEST_CASE("ipc codec: appended bytes are decoded a frame at a time, in order, then the error") {
  auto first = encode(MessageType::kHeartbeat, {{"seq", 1}});
  auto second = encode(MessageType::kHeartbeat, {{"seq", 2}});
  const std::string broken = raw_frame(3, 99, "{}");
  Decoder d(Sender::kMaster);
  d.append(*first + *second + broken);
  std::optional<Frame> f;
  CHECK(d.has_frame());
  REQUIRE(d.next(f).is_ok());
  REQUIRE(f);
  CHECK(f->payload["seq"] == 1);
  // Nothing after the first frame was parsed yet: the rest is still bytes.
  CHECK(d.buffered() == second->size() + broken.size());
  REQUIRE(d.next(f).is_ok());
  REQUIRE(f);
  CHECK(f->payload["seq"] == 2);
  CHECK(d.has_frame());  // complete, though broken: next() finds out
  auto s = d.next(f);
  CHECK(s.code() == Code::kProtocol);
  CHECK_THAT(s.message(), Catch::Contains("unknown message type 99"));
  CHECK_FALSE(f);
  CHECK_FALSE(d.has_frame());

  Decoder partial(Sender::kMaster);
  partial.append(first->substr(0, first->size() - 1));
  CHECK_FALSE(partial.has_frame());
  REQUIRE(partial.next(f).is_ok());
  CHECK_FALSE(f);
  partial.append(first->substr(first->size() - 1));
  CHECK(partial.has_frame());
  REQUIRE(partial.next(f).is_ok());
  REQUIRE(f);
  CHECK(f->payload["seq"] == 1);
  CHECK(partial.buffered() == 0);
}

TEST_CASE("ipc codec: a frame over the size limit is refused when encoding") {
  std::string big(corral::ipc::kMaxFrameBytes, 'x');
  auto r = encode(MessageType::kHeartbeat, {{"blob", big}});
  CHECK_FALSE(r.is_ok());
  CHECK(r.status().code() == Code::kResourceExhausted);
}

// Found by tests/fuzz/fuzz_conditions (corpus/fuzz_conditions/seed-invalid-utf8-body): a
// captured body that is not UTF-8 made encode() throw, which would end the worker.
TEST_CASE("ipc codec: text that is not UTF-8 is sent with U+FFFD, never thrown about") {
  auto bytes = encode(MessageType::kEvents, {{"vars", {{"raw", "caf\xc3\xa9 \xff|\xc3"}}}});
  REQUIRE(bytes.is_ok());
  Decoder d(Sender::kMaster);
  std::vector<Frame> out;
  REQUIRE(d.feed(*bytes, out).is_ok());
  REQUIRE(out.size() == 1);
  CHECK(out[0].payload["vars"]["raw"] == "caf\xc3\xa9 \xef\xbf\xbd|\xef\xbf\xbd");
}

TEST_CASE("ipc codec: every message in the table has a unique wire value and a known sender") {
  for (int v = 0; v < 256; ++v) {
    const auto* info = corral::ipc::find_message(static_cast<uint8_t>(v));
    if (info == nullptr) continue;
    CHECK(static_cast<int>(info->type) == v);
    CHECK(&corral::ipc::message_info(info->type) == info);
    CHECK_FALSE(info->name.empty());
  }
  CHECK(corral::ipc::find_message(0) == nullptr);
  CHECK(corral::ipc::message_info(MessageType::kHello).sender == Sender::kWorker);
  CHECK(corral::ipc::message_info(MessageType::kStop).sender == Sender::kMaster);
}
