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

// `bytes` as lowercase hex, two digits per byte.
std::string to_hex(std::string_view bytes);
// The bytes of a hex string (either case); nullopt when its length is odd or a character is
// not a hex digit.
std::optional<std::string> from_hex(std::string_view hex);

}  // namespace corral::text
