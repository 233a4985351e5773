#include "shared/callback/token.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace corral::callback {
namespace {

constexpr size_t kKeyBytes = 32;
constexpr size_t kMacBytes = 16;  // 128 bits of the HMAC-SHA256

std::string to_hex(const unsigned char* bytes, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  return out;
}

bool is_key(std::string_view key) {
  return key.size() == 2 * kKeyBytes &&
         key.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string mac(std::string_view key, std::string_view message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &len);
  return to_hex(out, kMacBytes);
}

std::optional<uint32_t> number(std::string_view text) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  if (text.size() > 1 && text[0] == '0') return std::nullopt;  // one spelling per number
  return n;
}

}  // namespace

Result<std::string> make_key() {
  unsigned char bytes[kKeyBytes];
  if (RAND_bytes(bytes, kKeyBytes) != 1) return io_error("no random bytes for the callback key");
  return to_hex(bytes, kKeyBytes);
}

Result<std::string> load_or_make_key(const std::string& path) {
  std::ifstream in(path);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    std::string key = text.str();
    while (!key.empty() && (key.back() == '\n' || key.back() == ' ')) key.pop_back();
    if (!is_key(key)) return invalid_argument(path + ": expected a callback key of 64 hex digits");
    return key;
  }
  Result<std::string> key = make_key();
  if (!key) return key;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return io_error(path + ": cannot create the callback key: " + std::strerror(errno));
  std::string line = *key + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  if (!ok) return io_error(path + ": cannot write the callback key: " + std::strerror(errno));
  return key;
}

std::string token(std::string_view key, std::string_view run, uint32_t index, uint32_t step) {
  std::string address = std::string(run) + "." + std::to_string(index) + "." + std::to_string(step);
  return address + "." + mac(key, address);
}

std::optional<Address> check(std::string_view key, std::string_view token) {
  size_t last = token.rfind('.');
  if (last == std::string_view::npos || token.size() - last - 1 != 2 * kMacBytes) {
    return std::nullopt;
  }
  std::string_view address = token.substr(0, last);
  std::string want = mac(key, address);
  if (CRYPTO_memcmp(want.data(), token.data() + last + 1, want.size()) != 0) return std::nullopt;
  size_t step_dot = address.rfind('.');
  if (step_dot == std::string_view::npos || step_dot == 0) return std::nullopt;
  size_t index_dot = address.rfind('.', step_dot - 1);
  if (index_dot == std::string_view::npos) return std::nullopt;
  auto index = number(address.substr(index_dot + 1, step_dot - index_dot - 1));
  auto step = number(address.substr(step_dot + 1));
  if (!index || !step || index_dot == 0) return std::nullopt;
  return Address{std::string(address.substr(0, index_dot)), *index, *step};
}

}  // namespace corral::callback
