// Durations, sizes and HOST:PORT: the text forms of config values.
#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <span>
#include <string_view>

#include "config/config.h"
#include "shared/http/message.h"

namespace corral::config {
namespace {

struct Unit {
  std::string_view suffix;
  uint64_t factor;
};

// Largest first: format_* picks the first unit that divides the value exactly.
constexpr Unit kDurationUnits[] = {
    {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1},
};
constexpr uint64_t kKiB = 1024;
constexpr Unit kByteUnits[] = {
    {"PB", kKiB* kKiB* kKiB* kKiB* kKiB},
    {"TB", kKiB* kKiB* kKiB* kKiB},
    {"GB", kKiB* kKiB* kKiB},
    {"MB", kKiB* kKiB},
    {"KB", kKiB},
    {"", 1},
};

// "<digits>[.<digits>] <unit>" split into its parts; nullopt if it does not have that shape.
struct Quantity {
  uint64_t whole = 0;
  double fraction = 0;  // in [0, 1)
  bool too_large = false;
  std::string_view unit;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

size_t count_digits(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
  return n;
}

std::optional<Quantity> split_quantity(std::string_view text) {
  std::string_view s = trim(text);
  Quantity q;
  size_t n = count_digits(s);
  if (n == 0) return std::nullopt;
  q.too_large =
      std::from_chars(s.data(), s.data() + n, q.whole).ec == std::errc::result_out_of_range;
  s.remove_prefix(n);
  if (!s.empty() && s.front() == '.') {
    size_t frac_digits = count_digits(s.substr(1));
    if (frac_digits == 0) return std::nullopt;
    std::string digits = "0" + std::string(s.substr(0, frac_digits + 1));
    q.fraction = std::stod(digits);
    s.remove_prefix(frac_digits + 1);
  }
  s = trim(s);
  for (char c : s) {
    if (!std::isalpha(static_cast<unsigned char>(c))) return std::nullopt;
  }
  q.unit = s;
  return q;
}

// whole * factor + round(fraction * factor), or nullopt on overflow.
std::optional<uint64_t> scale(const Quantity& q, uint64_t factor) {
  uint64_t product = 0;
  if (q.too_large || __builtin_mul_overflow(q.whole, factor, &product)) return std::nullopt;
  auto extra = static_cast<uint64_t>(std::llround(q.fraction * static_cast<double>(factor)));
  uint64_t sum = 0;
  if (__builtin_add_overflow(product, extra, &sum)) return std::nullopt;
  return sum;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) { return http::iequals(a, b); }

// Accepts "K", "KB" and "KiB" (any case) for each power of 1024, and "" or "B" for bytes.
std::optional<uint64_t> byte_unit_factor(std::string_view unit) {
  if (unit.empty() || equals_ignoring_case(unit, "b")) return 1;
  for (const Unit& u : kByteUnits) {
    if (u.suffix.empty()) continue;
    std::string letter(1, u.suffix[0]);
    if (equals_ignoring_case(unit, letter) || equals_ignoring_case(unit, u.suffix) ||
        equals_ignoring_case(unit, letter + "iB")) {
      return u.factor;
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> duration_unit_factor(std::string_view unit) {
  for (const Unit& u : kDurationUnits) {
    if (unit == u.suffix) return u.factor;
  }
  return std::nullopt;
}

std::string json_quoted(std::string_view text) { return nlohmann::json(text).dump(); }

std::string format_with(uint64_t value, std::span<const Unit> units) {
  for (const Unit& u : units) {
    if (value % u.factor == 0) return std::to_string(value / u.factor) + std::string(u.suffix);
  }
  return std::to_string(value);  // unreachable: the last unit's factor is 1
}

}  // namespace

Result<uint64_t> parse_duration_ms(const std::string& text) {
  std::optional<Quantity> q = split_quantity(text);
  std::optional<uint64_t> factor = q ? duration_unit_factor(q->unit) : std::nullopt;
  if (!factor) return invalid_argument("expected a duration like \"5s\", got " + json_quoted(text));
  std::optional<uint64_t> ms = scale(*q, *factor);
  if (!ms) return invalid_argument("duration " + json_quoted(text) + " is too large");
  return *ms;
}

Result<uint64_t> parse_bytes(const std::string& text) {
  std::optional<Quantity> q = split_quantity(text);
  std::optional<uint64_t> factor = q ? byte_unit_factor(q->unit) : std::nullopt;
  if (!factor) return invalid_argument("expected a size like \"512MB\", got " + json_quoted(text));
  std::optional<uint64_t> bytes = scale(*q, *factor);
  if (!bytes) return invalid_argument("size " + json_quoted(text) + " is too large");
  return *bytes;
}

std::string format_duration_ms(uint64_t ms) {
  if (ms == 0) return "0s";
  return format_with(ms, kDurationUnits);
}

std::string format_bytes(uint64_t bytes) {
  if (bytes == 0) return "0";
  return format_with(bytes, kByteUnits);
}

Result<std::pair<std::string, int>> parse_host_port(const std::string& text) {
  auto bad = [&](std::string_view why) {
    return invalid_argument("expected HOST:PORT like \"127.0.0.1:7070\", got " + json_quoted(text) +
                            " (" + std::string(why) + ")");
  };
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  std::string host = text.substr(0, colon);
  std::string port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of("[]:") != std::string::npos) {
    return bad("an IPv6 address needs brackets, as in [::1]:7070");
  }
  if (host.empty()) return bad("no host");
  if (port_text.empty()) return bad("no port");
  if (count_digits(port_text) != port_text.size()) return bad("the port is not a number");
  int port = 0;
  auto parsed = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (parsed.ec != std::errc() || port > 65535) return bad("the port is above 65535");
  return std::pair{host, port};
}

bool is_loopback(const std::string& host) {
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6) != 0;
  return false;
}

}  // namespace corral::config
