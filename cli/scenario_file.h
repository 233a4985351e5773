// What `corral run` and `corral load` read from the command line: a scenario file and
// --var NAME=VALUE flags. Pure apart from reading the file; any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::cli {

// The JSON object in `path`. Fails with "cannot read PATH", "PATH: not valid JSON" or "PATH:
// not a JSON object".
Result<nlohmann::json> read_scenario_file(const std::string& path);
// A value from the command line: one that reads as JSON (3, true, {"a":1}) keeps its type;
// anything else is text.
nlohmann::json json_or_text(const std::string& text);
// The --var flags as an object. A value that reads as JSON (3, true, {"a":1}) keeps its type;
// anything else is text. Fails with "--var X: expected NAME=VALUE".
Result<nlohmann::json> vars_from_flags(const std::vector<std::string>& flags);

}  // namespace corral::cli
