// ResponseView: what conditions and captures read of one HTTP response.
//
// A view borrows everything: the engine keeps the response (headers, body, parsed JSON) alive
// while it evaluates a step's conditions and captures, then drops it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace corral::scenario {

using Header = std::pair<std::string, std::string>;  // name as received, value

struct ResponseView {
  int status = 0;
  std::span<const Header> headers;
  std::string_view body;
  // The body parsed as JSON, or null when it is not JSON (or the engine did not parse it
  // because no condition or capture of the step reads it: see Step::reads_json).
  const nlohmann::json* json = nullptr;
  // An exec step's result: the command's exit code (then `body` is its stdout and `json` that
  // parsed); nullopt for a response.
  std::optional<int> exit_code;

  // The first header called `name`, compared case-insensitively; nullopt if there is none.
  std::optional<std::string_view> header(std::string_view name) const;
};

bool equals_ignoring_case(std::string_view a, std::string_view b);

// `value` as compact JSON for a message, cut to about `max_chars` with "..." so a large body
// cannot flood a failure reason.
std::string describe_value(const nlohmann::json& value, size_t max_chars = 120);

}  // namespace corral::scenario
