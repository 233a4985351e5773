// The "parallel" step's own fields. docs/scenarios.md, "parallel".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/scenario/model.h"

namespace corral::steps::parallel {

// The branches themselves are the step's Step::branches (at least one).
struct Parallel : scenario::KindSpec {
  // Branches that must pass for the step to pass: all of them ("join": "all"), 1 ("any"), or
  // n ({"at_least": n}). Once that many passed, the others are cancelled.
  size_t needed = 0;
  size_t max_concurrent = 0;  // branches running at once; the others wait their turn, in order
};

}  // namespace corral::steps::parallel
