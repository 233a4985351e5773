#include "shared/text/packed.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <limits>

namespace corral {
namespace {

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

std::string base64_encode(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3), '\0');
  int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes(data),
                            static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(len));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0 || text.size() > std::numeric_limits<int>::max()) {
    return invalid_argument("not base64: its length is not a multiple of 4");
  }
  std::string out(text.size() / 4 * 3, '\0');
  int len = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes(text),
                            static_cast<int>(text.size()));
  if (len < 0) return invalid_argument("not base64");
  // EVP_DecodeBlock counts the bytes that padding stands for; they are not data.
  size_t pad = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  out.resize(static_cast<size_t>(len) - pad);
  return out;
}

std::string pack(std::string_view text) {
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::string z(8 + size, '\0');
  // The text's length first (8 bytes, little-endian), so that unpack() knows what to make room for.
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) z[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  compress2(reinterpret_cast<Bytef*>(z.data() + 8), &size, bytes(text),
            static_cast<uLong>(text.size()), Z_DEFAULT_COMPRESSION);
  z.resize(8 + size);
  return base64_encode(z);
}

Result<std::string> unpack(std::string_view packed, size_t max_bytes) {
  auto z = base64_decode(packed);
  if (!z) return z.status();
  if (z->size() < 8) return invalid_argument("not packed text: too short");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>((*z)[i]);
  if (n > max_bytes) {
    return invalid_argument("packed text of " + std::to_string(n) + " bytes, over the " +
                            std::to_string(max_bytes) + " allowed");
  }
  std::string out(n, '\0');
  uLongf size = static_cast<uLongf>(n);
  int rc =
      uncompress(reinterpret_cast<Bytef*>(out.data()), &size,
                 reinterpret_cast<const Bytef*>(z->data() + 8), static_cast<uLong>(z->size() - 8));
  if (rc != Z_OK || size != n)
    return invalid_argument("not packed text: its data does not inflate");
  return out;
}

}  // namespace corral
