#include "shared/text/utf8.h"

#include <algorithm>
#include <cstdint>

namespace corral::text {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the sequence that starts at s[i] when it is well-formed, else 0. The ranges
// of the second byte are those of RFC 3629's table, which rule out overlong forms (E0, F0),
// surrogates (ED) and code points past U+10FFFF (F4).
size_t sequence_length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = at(0);
  if (c < 0x80) return 1;
  size_t n = c >= 0xC2 && c <= 0xDF   ? 2
             : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4
                                      : 0;
  if (n == 0 || i + n > s.size()) return 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c == 0xE0) lo = 0xA0;
  if (c == 0xED) hi = 0x9F;
  if (c == 0xF0) lo = 0x90;
  if (c == 0xF4) hi = 0x8F;
  if (at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (!is_continuation(at(k))) return 0;
  }
  return n;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Appends `bytes` to `out` as well-formed UTF-8, with U+FFFD for each byte that starts no
// well-formed sequence and for each character (its bytes) `refused` rejects, until `out` would
// pass `limit` bytes. Returns the bytes of `bytes` used.
template <typename Refused>
size_t append_utf8(std::string& out, std::string_view bytes, size_t limit, Refused refused) {
  size_t i = 0;
  while (i < bytes.size()) {
    size_t n = sequence_length(bytes, i);
    bool replace = n == 0 || refused(bytes.substr(i, n));
    size_t grows = replace ? kReplacement.size() : n;
    if (out.size() + grows > limit) break;
    if (replace) {
      out += kReplacement;
      i += n == 0 ? 1 : n;  // one for each bad byte, one for a refused character
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return i;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // Runs of ASCII are the common case: skip them eight bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t word = 0;
      for (size_t k = 0; k < 8; ++k)
        word |= uint64_t{static_cast<unsigned char>(s[i + k])} << (8 * k);
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    size_t n = sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  append_utf8(out, bytes, std::string::npos, [](std::string_view ch) { return ch[0] == '\0'; });
  return out;
}

std::string printable_prefix(std::string_view bytes, size_t max_bytes, bool* cut) {
  std::string out;
  out.reserve(std::min(bytes.size(), max_bytes));
  // C0 controls and DEL, and the C1 controls (U+0080..U+009F) some terminals obey too.
  auto control = [](std::string_view ch) {
    auto c = static_cast<unsigned char>(ch[0]);
    if (ch.size() == 2) return c == 0xC2 && static_cast<unsigned char>(ch[1]) < 0xA0;
    return ch.size() == 1 && (c < 0x20 || c == 0x7F) && c != '\t' && c != '\n' && c != '\r';
  };
  size_t used = append_utf8(out, bytes, max_bytes, control);
  if (cut != nullptr) *cut = used < bytes.size();
  return out;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) {
    auto b = static_cast<unsigned char>(ch);
    out += kDigits[b >> 4];
    out += kDigits[b & 0x0f];
  }
  return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = hex_value(hex[i]), lo = hex_value(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>((hi << 4) | lo);
  }
  return out;
}

}  // namespace corral::text
