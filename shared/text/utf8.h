// Bytes that may or may not be UTF-8: captured response bodies and headers are kept as the
// server sent them, and only some destinations (a JSON body, an IPC frame, the journal) need
// UTF-8. Pure functions, any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace corral::text {

// Whether `s` is well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past
// U+10FFFF, no truncated sequence. The empty string is valid.
bool is_utf8(std::string_view s);

// `bytes` as well-formed UTF-8 without NUL (what a PostgreSQL text value may hold): each byte
// that starts no well-formed sequence, and each NUL, becomes U+FFFD.
std::string to_utf8(std::string_view bytes);

// What follows a text cut short: "…".
inline constexpr std::string_view kEllipsis = "\xE2\x80\xA6";

// The start of `bytes` as text to show on a terminal or a web page: at most `max_bytes` bytes of
// whole characters, with U+FFFD for each byte that starts no well-formed sequence and for each
// control character except tab, line feed and carriage return. `*cut` (when given) tells
// whether some of `bytes` were left out.
std::string printable_prefix(std::string_view bytes, size_t max_bytes, bool* cut = nullptr);

// `bytes` as lowercase hex, two digits per byte.
std::string to_hex(std::string_view bytes);
// The bytes of a hex string (either case); nullopt when its length is odd or a character is
// not a hex digit.
std::optional<std::string> from_hex(std::string_view hex);

}  // namespace corral::text
