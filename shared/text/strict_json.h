// JSON as corral reads it from people: scenario files, config files and API bodies. nlohmann's
// parser keeps the last of two equal keys in an object, so `{"sleep": "1s", "sleep": "2s"}`
// would quietly sleep 2 s and a second "expect" would drop the first; here a repeated key is an
// error that names it and where it is. A syntax error says its line and column. Pure; any
// thread.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::text {

// The document in `text`, or kInvalidArgument:
//   `line 3, column 5: syntax error while parsing object - unexpected string literal; expected '}'`
//   `steps[1]: the key "expect" appears twice`
Result<nlohmann::json> parse_strict_json(std::string_view text);

}  // namespace corral::text
