// Callback tokens: the credential in a callback step's URL (`POST /callbacks/<token>`).
//
// A token names the instance and step it is for, and proves it came from this daemon:
//
//     <run>.<index>.<step>.<mac>     e.g. r12-c034.7.2.5f0c...(32 hex digits)
//
// where mac is HMAC-SHA256 over "<run>.<index>.<step>" with the daemon's callback key, cut to
// its first 128 bits. Nothing per token is stored: a worker makes the URL when a template asks
// for `{{callback_url}}`, and the master checks a token by computing the mac again (in constant
// time). The key is 32 random bytes kept in the daemon's home (<home>/callback.key, mode 0600);
// whoever holds it can make tokens, so it travels only on the worker pipe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shared/status.h"

namespace corral::callback {

// A new random key, as 64 hex digits.
Result<std::string> make_key();

// Reads the key at `path`, making it (mode 0600) when the file does not exist. Fails naming the
// path when it cannot, or when the file does not hold a key.
Result<std::string> load_or_make_key(const std::string& path);

// The token for step `step` of instance `index` of run `run`.
std::string token(std::string_view key, std::string_view run, uint32_t index, uint32_t step);

struct Address {
  std::string run;
  uint32_t index = 0;
  uint32_t step = 0;
};

// What a token is for, when it is one this key made; nullopt for anything else.
std::optional<Address> check(std::string_view key, std::string_view token);

}  // namespace corral::callback
