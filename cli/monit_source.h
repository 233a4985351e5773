// Where `corral monit` gets what it shows, one refresh at a time: the daemon's control API
// (health, workers, runs and their failure groups), the workers' CPU time from /proc when the
// daemon runs on this host, and the last lines of the log files in $CORRAL_HOME/logs.
// Blocking I/O; one thread.
#pragma once

#include <string>

#include "cli/api.h"
#include "cli/monit_history.h"
#include "cli/monit_view.h"
#include "cli/verb.h"

namespace corral::cli {

class MonitSource {
 public:
  // Each API call gives up after `timeout_ms`. CPU is read from /proc only when the daemon is
  // asked over its unix socket: a pid from a daemon over TCP may name another host's process.
  MonitSource(const Context& ctx, long timeout_ms);

  // Refreshes `snapshot` (answers, log lines, the time) and adds a sample per worker to
  // `history`. When the daemon does not answer, keeps the previous answers, says why in
  // snapshot.problem and problem_detail, and adds no sample. Reads at most `log_lines` lines of
  // each log file.
  void refresh(MonitSnapshot& snapshot, WorkerHistory& history, size_t log_lines);

  // Where the daemon is asked, for messages.
  const std::string& where() const { return api_.socket_path(); }

 private:
  // The API's answers into `snapshot`, all of them or none.
  Status ask(MonitSnapshot& snapshot) const;
  void sample(const std::vector<api::WorkerEntry>& workers, WorkerHistory& history);
  std::vector<std::string> read_logs(size_t n) const;

  Api api_;
  bool same_host_;
  std::string logs_dir_;
  CpuMeter cpu_;
};

}  // namespace corral::cli
