#include "config/secrets.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

#include <nlohmann/json.hpp>

#include "config/config.h"

extern char** environ;

namespace corral::config {
namespace {

constexpr std::string_view kEnvPrefix = "CORRAL_SECRET_";

bool is_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

void add_from_environment(Secrets& secrets) {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (!entry.starts_with(kEnvPrefix)) continue;
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(entry.substr(kEnvPrefix.size(), eq - kEnvPrefix.size()));
    if (!is_name(name)) {
      throw ConfigError("environment variable " + std::string(entry.substr(0, eq)) +
                        ": a secret's name may hold only letters, digits and \"_\"");
    }
    secrets.add(name, std::string(entry.substr(eq + 1)));
  }
}

void add_from_file(Secrets& secrets, const std::string& path) {
  const std::string where = "secrets_file " + path + ": ";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw ConfigError(where + std::strerror(errno));
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw ConfigError(where + "mode " + mode +
                      " lets its group or others read it; make it 0600 (chmod 600)");
  }
  Result<std::string> text = read_whole_file(path);
  if (!text) throw ConfigError(where + text.status().message());
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw ConfigError(where + "expected a JSON object of secret names and string values");
  }
  for (const auto& [name, value] : j.items()) {
    if (!is_name(name)) {
      throw ConfigError(where + "\"" + name + "\": a name may hold only letters, digits and \"_\"");
    }
    if (!value.is_string()) throw ConfigError(where + name + ": expected a string value");
    secrets.add(name, value.get<std::string>());
  }
}

}  // namespace

Secrets load_secrets(const std::string& secrets_file) {
  Secrets secrets;
  add_from_environment(secrets);
  if (!secrets_file.empty()) add_from_file(secrets, secrets_file);
  return secrets;
}

}  // namespace corral::config
