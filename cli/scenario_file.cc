#include "cli/scenario_file.h"

#include <fstream>
#include <sstream>

#include "shared/text/strict_json.h"

namespace corral::cli {

using nlohmann::json;

Result<json> read_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid_argument("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = text::parse_strict_json(text.str());
  if (!doc) return invalid_argument(path + ": " + doc.status().message());
  if (!doc->is_object()) return invalid_argument(path + ": not a JSON object");
  return doc;
}

json json_or_text(const std::string& text) {
  json value = json::parse(text, nullptr, false);
  return value.is_discarded() ? json(text) : value;
}

Result<json> vars_from_flags(const std::vector<std::string>& flags) {
  json vars = json::object();
  for (const auto& v : flags) {
    size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) {
      return invalid_argument("--var " + v + ": expected NAME=VALUE");
    }
    vars[v.substr(0, eq)] = json_or_text(v.substr(eq + 1));
  }
  return vars;
}

}  // namespace corral::cli
