#include "worker/engine/jitter.h"

#include <algorithm>
#include <cmath>

namespace corral::worker {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t jitter_seed(std::string_view run_id) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : run_id) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

double jitter_unit(uint64_t seed, uint32_t instance, uint32_t step, uint32_t attempt) {
  const uint64_t x = mix64(mix64(mix64(seed ^ instance) ^ step) ^ attempt);
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

uint64_t jittered_ms(uint64_t ms, double fraction, uint64_t seed, uint32_t instance,
                     uint32_t step, uint32_t attempt) {
  if (fraction <= 0 || ms == 0) return ms;
  const double u = jitter_unit(seed, instance, step, attempt);
  const double scaled = static_cast<double>(ms) * (1.0 + fraction * (2.0 * u - 1.0));
  return static_cast<uint64_t>(std::llround(std::max(0.0, scaled)));
}

}  // namespace corral::worker
