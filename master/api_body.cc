#include "master/api_body.h"

#include <algorithm>
#include <vector>

#include "config/fields.h"

namespace corral::master {

std::optional<std::string> unknown_field(const nlohmann::json& body,
                                         std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : body.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::vector<std::string_view> names(known);
    return config::unknown_name("field", key, names);
  }
  return std::nullopt;
}

}  // namespace corral::master
