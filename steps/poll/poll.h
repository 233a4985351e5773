// The "poll" step's own fields. docs/scenarios.md, "poll".
#pragma once

#include <cstdint>
#include <vector>

#include "config/scenario/model.h"

namespace corral::steps::poll {

// Repeating a request until a condition holds. After each response: if any `fail_if`
// holds the step fails; else if all of `until` hold it passes (captures are taken from that
// response); else the next attempt starts `interval` later, where the interval is `every_ms`
// times backoff_factor^(attempt-1), capped by max_interval_ms. The step fails when its limit
// (Step::limit_ms, the poll's "timeout") has passed since the first attempt started or after
// `max_attempts` attempts. The parser guarantees at least one of the two is set.
struct Poll : scenario::KindSpec {
  uint64_t every_ms = 0;                     // > 0
  std::vector<scenario::Condition> until;    // not empty; all must hold
  std::vector<scenario::Condition> fail_if;  // any one holding fails the step
  int max_attempts = 0;                      // 0 = unlimited
  double backoff_factor = 1.0;               // 1 = a fixed interval
  uint64_t max_interval_ms = 0;              // 0 = no cap
  double jitter = 0;  // each interval is scaled by a factor in [1 - jitter, 1 + jitter]
};

}  // namespace corral::steps::poll
