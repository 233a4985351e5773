// The UTF-8 check against nlohmann's own (it throws when asked to dump a text that is not
// UTF-8), over well-formed and malformed sequences and random bytes.
#include <catch2/catch.hpp>

#include <random>

#include <nlohmann/json.hpp>

#include "shared/text/utf8.h"

using corral::text::from_hex;
using corral::text::is_utf8;
using corral::text::to_hex;

namespace {

bool nlohmann_accepts(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

}  // namespace

TEST_CASE("utf8: well-formed text passes and each kind of malformed sequence fails") {
  CHECK(is_utf8(""));
  CHECK(is_utf8("plain ascii, longer than eight bytes"));
  CHECK(is_utf8("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8e \xf4\x8f\xbf\xbf"));
  CHECK_FALSE(is_utf8("\xff"));
  CHECK_FALSE(is_utf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(is_utf8("\xe0\x80\xaf"));      // overlong, three bytes
  CHECK_FALSE(is_utf8("\xed\xa0\x80"));      // a surrogate
  CHECK_FALSE(is_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  CHECK_FALSE(is_utf8("abcdefgh\xc3"));      // truncated after an ASCII run
  CHECK_FALSE(is_utf8("\x80"));              // a lone continuation byte
}

TEST_CASE("utf8: agrees with nlohmann's check on a million random strings") {
  std::mt19937 rng(1234);
  // Bytes drawn mostly from the interesting ranges, so that valid multi-byte text is common.
  const std::string alphabet("a\x7f\x80\xbf\xc2\xc3\xdf\xe0\xe1\xed\xef\xf0\xf4\xf5\xff\xa0\x90",
                             17);
  for (int n = 0; n < 1000000; ++n) {
    std::string s;
    size_t len = rng() % 12;
    for (size_t k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    if (is_utf8(s) != nlohmann_accepts(s)) {
      FAIL("disagreement on " << to_hex(s));
    }
  }
}

TEST_CASE("hex: round trip, and odd or non-hex input is refused") {
  const std::string bytes("\x00\x01\xfe\xff", 4);
  CHECK(to_hex(bytes) == "0001feff");
  CHECK(from_hex("0001FEff") == bytes);
  CHECK_FALSE(from_hex("abc").has_value());
  CHECK_FALSE(from_hex("zz").has_value());
}

TEST_CASE("utf8: to_utf8 keeps well-formed text and replaces bad bytes and NUL with U+FFFD") {
  using corral::text::to_utf8;
  CHECK(to_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xF0\x9F\x98\x80");
  CHECK(to_utf8(std::string("a\0b", 3)) ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(to_utf8("\xFF\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // bad, overlong
  CHECK(to_utf8("end \xE2\x82") == "end \xEF\xBF\xBD\xEF\xBF\xBD");          // cut short
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    std::string out = to_utf8(bytes);
    INFO(to_hex(bytes));
    CHECK(is_utf8(out));
    CHECK(out.find('\0') == std::string::npos);
    if (is_utf8(bytes) && bytes.find('\0') == std::string::npos) CHECK(out == bytes);
  }
}

TEST_CASE("utf8: a printable prefix keeps whole characters within its size and hides controls") {
  using corral::text::printable_prefix;
  bool cut = true;
  CHECK(printable_prefix("{\"state\": \"failed\"}\n", 512, &cut) == "{\"state\": \"failed\"}\n");
  CHECK_FALSE(cut);
  // A cut never splits a character: "é" is two bytes and does not fit in the fifth.
  CHECK(printable_prefix("abcd\xC3\xA9", 5, &cut) == "abcd");
  CHECK(cut);
  CHECK(printable_prefix("abcd\xC3\xA9", 6, &cut) == "abcd\xC3\xA9");
  CHECK_FALSE(cut);
  // Escape sequences, NUL, DEL and C1 controls would act on a terminal: U+FFFD instead. Tab,
  // line feed and carriage return stay.
  CHECK(printable_prefix("a\x1B[2Jb\tc\r\nd\x7F"
                         "e\xC2\x9B"
                         "f",
                         100) ==
        "a\xEF\xBF\xBD[2Jb\tc\r\nd\xEF\xBF\xBD"
        "e\xEF\xBF\xBD"
        "f");
  CHECK(printable_prefix(std::string("x\0y", 3), 100) == "x\xEF\xBF\xBDy");
  CHECK(printable_prefix("\xC2\xA0", 100) == "\xC2\xA0");  // U+00A0 is no control
  // A bad byte is three bytes out: one that does not fit ends the prefix.
  CHECK(printable_prefix("ab\xFF", 4, &cut) == "ab");
  CHECK(cut);
  CHECK(printable_prefix("", 10, &cut).empty());
  CHECK_FALSE(cut);
}
