// Jitter factors: stable for the same keys, within the fraction, spread over all of it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "worker/engine/jitter.h"

using corral::worker::jitter_seed;
using corral::worker::jittered_ms;

TEST_CASE("jitter: the same run, instance, step and attempt give the same wait") {
  const uint64_t seed = jitter_seed("r12-ab3f");
  CHECK(seed == jitter_seed("r12-ab3f"));
  CHECK(seed != jitter_seed("r12-ab3e"));
  CHECK(jittered_ms(5000, 0.1, seed, 7, 2, 3) == jittered_ms(5000, 0.1, seed, 7, 2, 3));
  CHECK(jittered_ms(5000, 0, seed, 7, 2, 3) == 5000);
  CHECK(jittered_ms(0, 0.5, seed, 7, 2, 3) == 0);
}

TEST_CASE("jitter: waits stay within the fraction and spread over all of it") {
  const uint64_t seed = jitter_seed("r1-0001");
  uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
  std::set<uint64_t> attempts_of_one;
  constexpr uint32_t kInstances = 10000;
  for (uint32_t i = 0; i < kInstances; ++i) {
    const uint64_t ms = jittered_ms(5000, 0.1, seed, i, 1, 1);
    lo = std::min(lo, ms);
    hi = std::max(hi, ms);
    sum += ms;
  }
  for (uint32_t a = 0; a < 20; ++a) attempts_of_one.insert(jittered_ms(5000, 0.1, seed, 3, 1, a));
  CHECK(lo >= 4500);
  CHECK(hi <= 5500);
  CHECK(lo < 4510);  // 10,000 draws reach close to both ends
  CHECK(hi > 5490);
  const double mean = static_cast<double>(sum) / kInstances;
  CHECK(mean > 4985);
  CHECK(mean < 5015);
  CHECK(attempts_of_one.size() >= 18);  // each attempt of one instance waits its own time
}
