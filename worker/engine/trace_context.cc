#include "worker/engine/trace_context.h"

#include <cstdio>

#include "worker/engine/jitter.h"

namespace corral::worker {

TraceId trace_id(uint64_t run_seed, uint64_t key) {
  TraceId t{mix64(run_seed ^ mix64(key)), mix64(mix64(run_seed) ^ key)};
  if (t.hi == 0 && t.lo == 0) t.lo = 1;
  return t;
}

uint64_t span_id(uint64_t salt, uint64_t counter) {
  uint64_t s = mix64(salt ^ counter);
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
