#include "shared/trace_context.h"

#include <cstdio>

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

std::string to_hex(TraceId trace) {
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(trace.hi),
                static_cast<unsigned long long>(trace.lo));
  return text;
}

std::string traceparent(TraceId trace, uint64_t span) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(span));
  return "00-" + to_hex(trace) + "-" + text + "-01";
}

}  // namespace corral
