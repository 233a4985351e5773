// Following corral's log files in $CORRAL_HOME/logs for `corral logs --follow`, as they grow and
// across rotation (the last lines of a file are shared/log_files.h). Blocking file I/O; one
// thread.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "shared/log_files.h"

namespace corral::cli {

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
