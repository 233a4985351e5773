#include "worker/engine/trace_context.h"

#include <cstdio>

namespace corral::worker {
namespace {

// splitmix64's finaliser: a bijection of 64-bit values.
uint64_t trace_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

TraceId trace_id(uint64_t run_seed, uint64_t key) {
  TraceId t{trace_mix(run_seed ^ trace_mix(key)), trace_mix(trace_mix(run_seed) ^ key)};
  if (t.hi == 0 && t.lo == 0) t.lo = 1;
  return t;
}

uint64_t span_id(uint64_t salt, uint64_t counter) {
  uint64_t s = trace_mix(salt ^ counter);
  return s == 0 ? 1 : s;
}

std::string traceparent(TraceId trace, uint64_t span) {
  char text[56];
  std::snprintf(text, sizeof text, "00-%016llx%016llx-%016llx-01",
                static_cast<unsigned long long>(trace.hi),
                static_cast<unsigned long long>(trace.lo), static_cast<unsigned long long>(span));
  return text;
}

}  // namespace corral::worker
