#include "config/sources.h"

#include <cstdlib>

#include "config/fields.h"

namespace corral::config {
namespace {

// The settings whose default defaults() takes from the environment, and the variable it reads.
struct FromEnvironment {
  std::string_view setting;
  const char* variable;
};
constexpr FromEnvironment kFromEnvironment[] = {
    {"home", "CORRAL_HOME"},
    {"api_token", "CORRAL_API_TOKEN"},
};

}  // namespace

std::string describe(const Origin& origin) {
  switch (origin.source) {
    case Source::kDefault:
      return "default";
    case Source::kEnvironment:
      return "env " + origin.name;
    case Source::kFile:
      return "file " + origin.name;
    case Source::kFlag:
      return "flag " + origin.name;
  }
  return "?";
}

Origin origin_of(std::string_view name, const Given& given) {
  if (auto flag = given.flags.find(std::string(name)); flag != given.flags.end()) {
    return {Source::kFlag, flag->second};
  }
  if (find_field(name) != nullptr && given.settings.is_object() &&
      given.settings.contains(std::string(name))) {
    return {Source::kFile, given.file};
  }
  for (const FromEnvironment& env : kFromEnvironment) {
    const char* value = env.setting == name ? std::getenv(env.variable) : nullptr;
    if (value != nullptr && *value != '\0') return {Source::kEnvironment, env.variable};
  }
  return {};
}

std::vector<Setting> effective_settings(const Config& cfg, const Given& given) {
  std::vector<Setting> rows;
  rows.push_back({"home", cfg.home, origin_of("home", given)});
  const nlohmann::json values = to_json(cfg);
  for (const Field& f : fields()) {
    const std::string name(f.name);
    nlohmann::json value = values.at(name);
    if (f.name == "api_token") value = cfg.api_token.empty() ? "(not set)" : "(set)";
    if (f.kind == Kind::kHooks) value = hooks_for_display(cfg.hooks);
    rows.push_back({name, std::move(value), origin_of(name, given)});
  }
  return rows;
}

}  // namespace corral::config
