// What the answer models' readers share (workers.cc, loads.cc).
#pragma once

#include <nlohmann/json.hpp>

namespace corral::api::detail {

// An optional field of an answer: absent and null both read as none.
inline bool present(const nlohmann::json& j, const char* name) {
  return j.is_object() && j.contains(name) && !j[name].is_null();
}

}  // namespace corral::api::detail
