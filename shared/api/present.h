// What the answer models' readers and writers share (workers.cc, loads.cc, runs.cc).
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::api::detail {

// An optional field of an answer: absent and null both read as none.
inline bool present(const nlohmann::json& j, const char* name) {
  return j.is_object() && j.contains(name) && !j[name].is_null();
}

// An array field as written: each item as `write` writes it (to_json unless given).
template <typename T, typename Write>
nlohmann::json array_of(const std::vector<T>& items, Write&& write) {
  nlohmann::json out = nlohmann::json::array();
  for (const T& item : items) out.push_back(write(item));
  return out;
}
template <typename T>
nlohmann::json array_of(const std::vector<T>& items) {
  return array_of(items, [](const T& item) { return to_json(item); });
}

// An optional field as written: its value, or null when none.
template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace corral::api::detail
