// How runs read in the terminal: the runs table, one run's summary, one instance's steps.
// Pure functions over the runs API's answers (shared/api/runs.h); any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/table.h"
#include "shared/api/runs.h"

namespace corral::cli {

// `corral runs`: one row per run (GET /runs "runs").
std::string render_runs_table(const std::vector<api::RunSummary>& runs, TableStyle style);
// `corral show RUN`: counts, durations and the most common failures (GET /runs/<id>).
std::string render_run(const api::RunDetail& run);
// `corral show RUN N`: the instance and a row per step (GET /runs/<id>/instances/<n>).
std::string render_instance(const api::InstanceEntry& instance, TableStyle style);
// One line of progress (GET /runs/<id>) after `elapsed_s` seconds:
// "r1-3f2a  running  12s  100 instances: 40 passed, 2 failed, 58 running".
std::string render_progress(const api::RunSummary& run, double elapsed_s);
// An elapsed time to the second: "0s", "59s", "2m05s", "1h02m03s". Negative counts as 0.
std::string elapsed_text(double seconds);

// When `corral run` writes progress to a pipe or a file (not a TTY): a line when the state or
// the counts changed since the last printed line, at most one per `min_gap`; the final line
// (the run has ended) only needs a change. Single-threaded; the caller supplies the clock.
class ProgressGate {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressGate(std::chrono::milliseconds min_gap) : min_gap_(min_gap) {}
  // Whether to print a line for `run` now; if so, remembers it as printed.
  bool due(const api::RunSummary& run, Clock::time_point now, bool final);

 private:
  std::chrono::milliseconds min_gap_;
  std::optional<std::pair<std::string, api::RunCounts>> last_;  // of the last printed line
  std::optional<Clock::time_point> last_at_;
};

}  // namespace corral::cli
