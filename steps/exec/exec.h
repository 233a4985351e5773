// The "exec" step's own fields. docs/scenarios.md, "exec".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario/model.h"

namespace corral::steps::exec {

// The step's limit (Step::limit_ms) is "timeout", 10 minutes when the file gives none.
constexpr uint64_t kDefaultTimeoutMs = 10 * 60 * 1000;
constexpr uint64_t kDefaultMaxOutput = uint64_t{1} << 20;

struct Exec : scenario::KindSpec {
  std::vector<scenario::Template> argv;  // not empty; argv[0] is looked up in PATH
  // Added to the worker's environment (whose CORRAL_SECRET_* variables the child never sees).
  std::vector<std::pair<std::string, scenario::Template>> env;
  std::optional<scenario::Template> cwd;  // else the worker's
  // Kept of stdout, and of stderr, each; the rest is read and dropped.
  uint64_t max_output_bytes = kDefaultMaxOutput;
};

}  // namespace corral::steps::exec
