// Where each setting's effective value came from: its default, the environment, the config file
// or a command-line flag, each later one winning (the order DaemonFlags::build and defaults()
// apply them in). For `corral config show`; pure apart from reading the environment.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace corral::config {

enum class Source { kDefault, kEnvironment, kFile, kFlag };

struct Origin {
  Source source = Source::kDefault;
  // The variable, file or flag: "CORRAL_API_TOKEN", "/etc/corral.json", "--workers"; "" for
  // kDefault.
  std::string name;

  bool operator==(const Origin&) const = default;
};

// "default", "env CORRAL_API_TOKEN", "file /etc/corral.json", "flag --workers".
std::string describe(const Origin& origin);

// What was given on top of the defaults.
struct Given {
  std::string file;                                    // the config file's path; "" for none
  nlohmann::json settings = nlohmann::json::object();  // that file's, as read_settings() gives
  std::map<std::string, std::string> flags;  // setting -> the flag that set it ("--workers")
};

// Where the setting `name` ("home" or a config-file field) got its value: a flag, else the file
// when it holds that field, else the variable defaults() reads for it ($CORRAL_HOME for home,
// $CORRAL_API_TOKEN for api_token) when that is set and not empty, else its default.
Origin origin_of(std::string_view name, const Given& given);

// One row of `corral config show`.
struct Setting {
  std::string name;
  // In config-file form ("5s", "512MB"); api_token: "(set)"/"(not set)"; hooks with each header
  // value "(set)".
  nlohmann::json value;
  Origin origin;
};

// "home", then every config-file field in the order of field_reference(), with the values of
// `cfg` (built from `given`). The API token and the hooks' header values are never in the result.
std::vector<Setting> effective_settings(const Config& cfg, const Given& given);

}  // namespace corral::config
