// Jitter: a wait scaled by a factor from [1 - fraction, 1 + fraction], so that instances that
// started together do not poll, retry or wake together for ever (`jitter` in a poll, a retry or
// a sleep step; docs/scenarios.md).
//
// The factor is a hash of the run, the instance, the step and the attempt, not a random draw:
// computed again, it comes out the same, so a sleep's end does not move when its timer checks
// it, nor when the instance resumes on another worker. Pure, any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace corral::worker {

// A stable 64-bit number for a run's id (FNV-1a), the first key of the hash below.
uint64_t jitter_seed(std::string_view run_id);
// SplitMix64's finaliser, a bijection of 64-bit values: every bit of the input moves about half
// the bits of the output. For values derived, not drawn (jitter factors, trace ids).
uint64_t mix64(uint64_t x);

// A number in [0, 1) from the four keys, spread evenly.
double jitter_unit(uint64_t seed, uint32_t instance, uint32_t step, uint32_t attempt);

// `ms` scaled by 1 + fraction * (2u - 1), u = jitter_unit(...); exactly `ms` when `fraction`
// is 0. `fraction` is from 0 to 1 (the parser's range).
uint64_t jittered_ms(uint64_t ms, double fraction, uint64_t seed, uint32_t instance,
                     uint32_t step, uint32_t attempt);

}  // namespace corral::worker
