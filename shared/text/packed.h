// Text kept small where it is stored as text: compressed with zlib, then written in base64, so
// that any column or file that takes text takes it (a PostgreSQL TEXT holds no NUL byte).
// Pure, any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "shared/status.h"

namespace corral {

// `data` in base64 (RFC 4648, with padding).
std::string base64_encode(std::string_view data);
// What `text` holds in base64; kInvalidArgument when it is not base64.
Result<std::string> base64_decode(std::string_view text);

// `text` compressed, in base64.
std::string pack(std::string_view text);
// The text pack() made; kInvalidArgument when `packed` is not such text or would unpack to more
// than `max_bytes`.
Result<std::string> unpack(std::string_view packed, size_t max_bytes = size_t{1} << 30);

}  // namespace corral
