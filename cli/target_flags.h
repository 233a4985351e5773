// `corral load`'s flags for the target corral starts (a load section's "target"):
//   --target-cmd 'node --max-old-space-size=128 server.js'
//   --target-ready http://127.0.0.1:8080/health | 8080 | 'log:listening on'
//   --target-ready-timeout 10s
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace CLI {
class App;
}

namespace corral::cli {

// `text` split into words as a shell splits a command line: blanks separate words, '...' and
// "..." quote, a backslash escapes the next character; nothing is expanded. Sets `error` (and
// returns what it has) on an unterminated quote.
std::vector<std::string> split_words(const std::string& text, std::string& error);

class TargetFlags {
 public:
  void add(CLI::App& app);
  // Writes the flags given into load["target"], over the file's, and makes its directory
  // absolute: the file's target runs in its "cwd" taken from the file's directory (the file's
  // directory without one), a --target-cmd in the current directory. Returns an error naming
  // the flag at fault, or "".
  std::string apply(nlohmann::json& load, const std::string& file) const;

 private:
  std::string cmd_, ready_, ready_timeout_;
};

}  // namespace corral::cli
