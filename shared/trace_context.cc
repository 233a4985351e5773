#include "shared/trace_context.h"

namespace corral {

uint64_t run_hash(std::string_view run_id) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : run_id) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

TraceId trace_id(uint64_t run_seed, uint64_t key) {
  TraceId t{mix64(run_seed ^ mix64(key)), mix64(mix64(run_seed) ^ key)};
  if (t.hi == 0 && t.lo == 0) t.lo = 1;
  return t;
}

uint64_t span_id(uint64_t salt, uint64_t counter) {
  uint64_t s = mix64(salt ^ counter);
  return s == 0 ? 1 : s;
}

void append_hex(std::string& out, uint64_t v) {
  char digits[16];
  for (int i = 15; i >= 0; --i, v >>= 4) digits[i] = "0123456789abcdef"[v & 15];
  out.append(digits, sizeof digits);
}

std::string to_hex(TraceId trace) {
  std::string out;
  out.reserve(32);
  append_hex(out, trace.hi);
  append_hex(out, trace.lo);
  return out;
}

std::string traceparent(TraceId trace, uint64_t span) {
  std::string out = "00-";
  out.reserve(55);
  append_hex(out, trace.hi);
  append_hex(out, trace.lo);
  out += '-';
  append_hex(out, span);
  out += "-01";
  return out;
}

namespace {

// The value of `n` lowercase or uppercase hex digits; nullopt on any other character.
std::optional<uint64_t> hex_value(std::string_view digits) {
  uint64_t v = 0;
  for (char c : digits) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

std::optional<TraceParent> parse_traceparent(std::string_view value) {
  // version "-" 32 hex "-" 16 hex "-" 2 hex; a later version may add fields after a "-".
  if (value.size() < 55 || value[2] != '-' || value[35] != '-' || value[52] != '-') {
    return std::nullopt;
  }
  if (value.size() > 55 && value[55] != '-') return std::nullopt;
  auto version = hex_value(value.substr(0, 2));
  auto hi = hex_value(value.substr(3, 16)), lo = hex_value(value.substr(19, 16));
  auto span = hex_value(value.substr(36, 16));
  if (!version || *version == 0xff || !hi || !lo || !span || !hex_value(value.substr(53, 2))) {
    return std::nullopt;
  }
  if ((*hi == 0 && *lo == 0) || *span == 0) return std::nullopt;
  return TraceParent{{*hi, *lo}, *span};
}

}  // namespace corral
