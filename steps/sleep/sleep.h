// The "sleep" step's own fields. docs/scenarios.md, "sleep".
#pragma once

#include <cstdint>

#include "config/scenario/model.h"

namespace corral::steps::sleep {

struct Sleep : scenario::KindSpec {
  uint64_t ms = 0;
  double jitter = 0;  // the sleep is scaled by a factor in [1 - jitter, 1 + jitter]
};

}  // namespace corral::steps::sleep
