// Packed text (shared/text/packed.h): base64 both ways, and zlib inside it.
#include <catch2/catch.hpp>

#include "shared/text/packed.h"

using corral::base64_decode;
using corral::base64_encode;
using corral::Code;
using corral::pack;
using corral::unpack;

TEST_CASE("base64: RFC 4648's test vectors, both ways") {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    INFO(plain);
    CHECK(base64_encode(plain) == coded);
    auto back = base64_decode(coded);
    REQUIRE(back);
    CHECK(*back == plain);
  }
}

TEST_CASE("base64: what is not base64 is refused") {
  CHECK(base64_decode("Zm9").status().code() == Code::kInvalidArgument);   // not a multiple of 4
  CHECK(base64_decode("Zm9*").status().code() == Code::kInvalidArgument);  // not its alphabet
}

TEST_CASE("pack: any bytes come back as they went in, smaller when they repeat") {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "{\"second\":" + std::to_string(i) + ",\"rps\":1000}\n";
  text += std::string("\0\xff\x01", 3);
  const std::string packed = pack(text);
  CHECK(packed.size() < text.size() / 4);
  CHECK(packed.find('\0') == std::string::npos);
  auto back = unpack(packed);
  REQUIRE(back);
  CHECK(*back == text);
  auto empty = unpack(pack(""));
  REQUIRE(empty);
  CHECK(empty->empty());
}

TEST_CASE("unpack: damaged text, or more than allowed, is refused by name") {
  const std::string packed = pack(std::string(5000, 'x'));
  auto over = unpack(packed, 4999);
  REQUIRE_FALSE(over);
  CHECK(over.status().message() == "packed text of 5000 bytes, over the 4999 allowed");
  std::string damaged = packed;
  damaged[20] = damaged[20] == 'A' ? 'B' : 'A';
  CHECK(unpack(damaged).status().code() == Code::kInvalidArgument);
  CHECK(unpack("Zg==").status().message() == "not packed text: too short");
  CHECK(unpack("not base64!").status().code() == Code::kInvalidArgument);
}
