#include "cli/scenario_file.h"

#include <fstream>
#include <sstream>

namespace corral::cli {

using nlohmann::json;

Result<json> read_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid_argument("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, false);
  if (doc.is_discarded()) return invalid_argument(path + ": not valid JSON");
  if (!doc.is_object()) return invalid_argument(path + ": not a JSON object");
  return doc;
}

Result<json> vars_from_flags(const std::vector<std::string>& flags) {
  json vars = json::object();
  for (const auto& v : flags) {
    size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) {
      return invalid_argument("--var " + v + ": expected NAME=VALUE");
    }
    json value = json::parse(v.substr(eq + 1), nullptr, false);
    vars[v.substr(0, eq)] = value.is_discarded() ? json(v.substr(eq + 1)) : value;
  }
  return vars;
}

}  // namespace corral::cli
