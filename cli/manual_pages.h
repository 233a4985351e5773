// The parts of corral's man pages that cli/manual.cc puts together: the fixed prose of corral.1,
// and the config and scenario pages. Internal to cli/manual.cc.
#pragma once

#include <string>
#include <string_view>

namespace corral::cli::manual {

// `items` separated by `sep`: "a, b, c".
template <typename Items>
std::string join(const Items& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

// The .TH line of a page, with corral's version, and the preamble every page shares.
std::string header(std::string_view title, int section, std::string_view part);
// corral.1 before its verbs (NAME, SYNOPSIS, DESCRIPTION) and after (ENVIRONMENT, FILES, EXIT
// STATUS, SEE ALSO).
std::string corral_head();
std::string corral_tail();
// corral-config.5: every field of the config-file field table.
std::string config_page();
// corral-scenario.5: the step kinds and docs/scenarios.md's field tables.
std::string scenario_page();

}  // namespace corral::cli::manual
