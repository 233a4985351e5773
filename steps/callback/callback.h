// The "callback" step's own fields. docs/scenarios.md, "callback".
#pragma once

#include <cstdint>

#include "config/scenario/model.h"

namespace corral::steps::callback {

// The step's limit (Step::limit_ms) is "timeout", an hour when the file gives none: the token
// expires with it.
constexpr uint64_t kDefaultTimeoutMs = 60 * 60 * 1000;

struct Callback : scenario::KindSpec {
  uint64_t heartbeat_ms = 0;  // the caller pings at least this often, else the step fails; 0: no
};

}  // namespace corral::steps::callback
