#include "worker/engine/jitter.h"

#include <algorithm>
#include <cmath>

namespace corral::worker {

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
