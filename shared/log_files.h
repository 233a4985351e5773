// Reading corral's log files in $CORRAL_HOME/logs (master.log, worker-<slot>.log): which files
// there are, the last lines of one, and the last lines of several merged in time order. Used by
// `corral logs` and `corral monit`, and by the master's GET /logs. Blocking file I/O; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "shared/status.h"

namespace corral {

// The last `n` lines of the file (fewer if it has fewer), without their newlines. A final line
// without a newline counts as a line. Reads backwards from the end, so huge files are cheap.
// With `max_bytes` > 0, reads at most that many bytes from the end; when that stops it before
// the start of the file and short of `n` lines, the first line it read, which the limit may have
// cut, is left out: fewer than `n` lines come back when they are long.
// Errors: Code::kNotFound if the file does not exist, Code::kIo for other failures.
Result<std::vector<std::string>> tail_lines(const std::string& path, size_t n,
                                            size_t max_bytes = 0);

// A current (not rotated) log file and how to label its lines.
struct LogFile {
  std::string path;
  std::string label;  // "master", "worker-0"
};

// master.log, then worker-<slot>.log in slot order, of those that exist in `logs_dir`.
// Rotated files (worker-0.1.log) are left out.
std::vector<LogFile> current_log_files(const std::string& logs_dir);

// The last `n` lines of several log files merged in time order, oldest first. A line sorts by
// the timestamp that starts it (corral's lines begin "2026-11-30T15:00:00.123"), a line without
// one by that of the nearest line above it in its file; ties keep the files' order.
std::vector<std::string> merge_log_tails(const std::vector<std::vector<std::string>>& tails,
                                         size_t n);

}  // namespace corral
