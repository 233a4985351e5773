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

#include "shared/trace_context.h"

namespace corral::worker {

// A stable 64-bit number for a run's id, the first key of the hash below (and of its traces).
inline uint64_t jitter_seed(std::string_view run_id) { return run_hash(run_id); }

// A number in [0, 1) from the four keys, spread evenly.
double jitter_unit(uint64_t seed, uint32_t instance, uint32_t step, uint32_t attempt);

// `ms` scaled by 1 + fraction * (2u - 1), u = jitter_unit(...); exactly `ms` when `fraction`
// is 0. `fraction` is from 0 to 1 (the parser's range).
uint64_t jittered_ms(uint64_t ms, double fraction, uint64_t seed, uint32_t instance,
                     uint32_t step, uint32_t attempt);

}  // namespace corral::worker
