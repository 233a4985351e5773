// What every API route with a JSON body checks before it reads the body's fields: the body is
// strict JSON (shared/text/strict_json.h: a repeated key is refused) and holds only the fields
// the route knows, so that a misspelt one (`"instance": 3`) is refused instead of silently
// taking its default.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace corral::master {

// The error for the first field of the object `body` that is not in `known`:
// `unknown field "instance" (did you mean "instances"?); known fields: scenario, instances, ...`;
// nullopt when every field is known.
std::optional<std::string> unknown_field(const nlohmann::json& body,
                                         std::initializer_list<std::string_view> known);

}  // namespace corral::master
