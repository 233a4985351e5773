// Logging: spdlog to size-rotated files in $CORRAL_HOME/logs. Each process logs to its own file
// (master.log, worker-<slot>.log), so nothing is funnelled through another process.
#pragma once

#include <cstdint>
#include <string>

#include "shared/status.h"

namespace corral {

struct LogOptions {
  std::string dir;   // e.g. $CORRAL_HOME/logs; created (0700) when missing
  std::string name;  // file name without ".log"
  uint64_t max_bytes = 10u << 20;
  int files = 5;
  std::string level = "info";
  bool also_stderr = false;  // mirror to stderr (the foreground daemon)
};

// Replaces spdlog's default logger with a rotating file logger. Fails when the directory or
// file cannot be created. Call before the loop starts.
Status open_log(const LogOptions& opts);

// Creates `path` and its parents with mode 0700 where missing.
Status make_dirs(const std::string& path);

}  // namespace corral
