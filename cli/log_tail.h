// Reading corral's log files in $CORRAL_HOME/logs for `corral logs`: the last lines of a file,
// and following files as they grow, across rotation. Blocking file I/O; one thread.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "shared/status.h"

namespace corral::cli {

// The last `n` lines of the file (fewer if it has fewer), without their newlines. A final line
// without a newline counts as a line. Reads backwards from the end, so huge files are cheap.
// Errors: Code::kNotFound if the file does not exist, Code::kIo for other failures.
Result<std::vector<std::string>> tail_lines(const std::string& path, size_t n);

// A current (not rotated) log file and how to label its lines.
struct LogFile {
  std::string path;
  std::string label;  // "master", "worker-0"
};

// master.log, then worker-<slot>.log in slot order, of those that exist in `logs_dir`.
// Rotated files (worker-0.1.log) are left out.
std::vector<LogFile> current_log_files(const std::string& logs_dir);

// Follows files like `tail -F`, by polling: poll() prints the complete lines appended since the
// last poll, each prefixed with "<label> | ". A file that shrinks or is replaced (a new inode,
// as after rotation) is read again from its start.
class LogFollower {
 public:
  // Follows `file` from its current end, or from its start when `from_start` (a file found after
  // following began) or when it does not exist yet. A path already followed is ignored.
  void add(const LogFile& file, bool from_start = false);
  void poll(std::ostream& out);

 private:
  struct Followed {
    LogFile file;
    uint64_t inode = 0;  // 0: not seen yet
    uint64_t offset = 0;
    std::string partial;  // bytes after the last newline, printed once the line completes
  };
  void poll_one(Followed& f, std::ostream& out);

  std::vector<Followed> files_;
  size_t label_width_ = 0;
};

}  // namespace corral::cli
