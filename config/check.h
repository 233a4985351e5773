// `corral config check`: a config file read the way the daemon reads it, with every problem
// reported rather than only the first.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace corral::config {

struct FileCheck {
  // One line each, without the file's name: `unknown field "wokers" (did you mean ...`,
  // "workers: must be between 0 and 1024, got 5000", "heartbeat_timeout (1s) must be greater
  // than ...", "secrets_file /x: mode 0644 ...". Empty when the daemon would accept the file.
  std::vector<std::string> problems;
  size_t fields_set = 0;  // the file's top-level keys; 0 when it is not a JSON object
};

// Reads `path` as the daemon does: defaults(), then the file, then validate(), then
// load_secrets() for its secrets_file. Each top-level key is applied on its own so that every
// bad one is reported; a key that fails keeps its default for the checks after it. A file that
// cannot be read, is not JSON or not an object gives that one problem. Reads the disk and the
// environment ($CORRAL_HOME, $CORRAL_API_TOKEN, CORRAL_SECRET_*); throws nothing.
FileCheck check_file(const std::string& path);

}  // namespace corral::config
