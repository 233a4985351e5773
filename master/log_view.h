// GET /logs: the last lines of the daemon's log files in $CORRAL_HOME/logs (master.log and the
// current worker-<slot>.log files), merged in time order, for the web dashboard.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "shared/http/message.h"
#include "shared/status.h"

namespace corral::master {

constexpr size_t kLogLinesDefault = 200;
constexpr size_t kLogLinesMax = 1000;
// How much of each file's end may be read for one answer: kLogBytesTotal over all the files,
// shared out, but never more than kLogBytesPerFile nor less than kLogBytesMinPerFile a file.
constexpr size_t kLogBytesTotal = 1 << 20;
constexpr size_t kLogBytesPerFile = 256 << 10;
constexpr size_t kLogBytesMinPerFile = 8 << 10;

struct LogQuery {
  size_t lines = kLogLinesDefault;
  std::string source;  // "" (every file), "master" or "worker-<slot>"
};

// The parameters of a GET /logs: `lines`, a whole number from 1 (more than kLogLinesMax reads
// as kLogLinesMax), and `source`. Errors: kInvalidArgument, naming the parameter and value.
Result<LogQuery> log_query(const http::Request& req);

// How many bytes to read at most from the end of each of `files` log files.
size_t log_bytes_per_file(size_t files);

// {"dir": logs_dir, "files": ["master", "worker-0", ...], "lines": [...]}: the last q.lines
// lines of the files q.source selects, oldest first; "files" names those that were read. A file
// that cannot be read (mid-rotation) is left out. Blocking reads, bounded by
// log_bytes_per_file(): see the comment in log_view.cc on why the master's loop may do them.
nlohmann::json read_log_tail(const std::string& logs_dir, const LogQuery& q);

}  // namespace corral::master
