// permessage-deflate (RFC 7692) for the messages of one thread. corral compresses and inflates
// each message on its own (no context takeover in either direction), so the zlib streams belong
// to the thread, not to a socket: a held socket costs no zlib memory between messages, and one
// deflate and one inflate state (about 300 KB) serve every socket of a worker's loop.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace corral::ws {

// `data` as one compressed message: a raw deflate stream with a sync flush, its final empty
// block (00 00 ff ff) removed (RFC 7692 7.2.1), appended to `out`.
void deflate_message(std::string_view data, std::string& out);

enum class InflateResult { kOk, kBadData, kTooBig };

// The compressed message `data` inflated into `out` (which it replaces). kTooBig as soon as it
// inflates past `cap` bytes: a small frame may not make a huge message. kBadData for bytes that
// are no deflate stream; `why` then holds zlib's words.
InflateResult inflate_message(std::string_view data, uint64_t cap, std::string& out,
                              std::string& why);

}  // namespace corral::ws
