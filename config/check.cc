#include "config/check.h"

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/secrets.h"

namespace corral::config {

FileCheck check_file(const std::string& path) {
  FileCheck check;
  nlohmann::json settings;
  try {
    settings = read_settings(path);
  } catch (const ConfigError& e) {
    check.problems.emplace_back(e.what());
    return check;
  }
  check.fields_set = settings.size();

  Config cfg = defaults();
  for (const auto& [key, value] : settings.items()) {
    nlohmann::json one = nlohmann::json::object();
    one[key] = value;
    try {
      apply_json(cfg, one);
    } catch (const ConfigError& e) {
      check.problems.emplace_back(e.what());
    }
  }
  for (std::string& problem : validation_problems(cfg)) {
    check.problems.push_back(std::move(problem));
  }
  try {
    load_secrets(cfg.secrets_file);
  } catch (const ConfigError& e) {
    check.problems.emplace_back(e.what());
  }
  return check;
}

}  // namespace corral::config
