// What `corral monit` draws, as a pure function of the daemon's answers, the workers' history
// and the size of the screen, so that it can be tested without a daemon or a terminal. Any
// thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/format.h"
#include "cli/monit_history.h"
#include "shared/api/runs.h"
#include "shared/api/workers.h"

namespace corral::cli {

// What one refresh gathered. A refresh that failed keeps the previous answers and says why in
// `problem`.
struct MonitSnapshot {
  api::Health health;                     // GET /health
  std::vector<api::WorkerEntry> workers;  // GET /workers, in slot order
  std::vector<api::RunSummary> runs;      // GET /runs, newest first
  // Run id -> the failures of GET /runs/<id>, for the runs shown that have some.
  std::map<std::string, std::vector<api::RunFailure>> failures;
  std::vector<std::string> log_lines;  // the last lines of the logs, oldest first
  std::string logs_dir;
  // Why the last refresh failed, "" when it worked: "daemon not answering on <socket>", and the
  // error itself.
  std::string problem;
  std::string problem_detail;
  WallClock::time_point now;
  WallClock::time_point answered_at;  // when the daemon last answered
  std::chrono::milliseconds interval{1000};
};

// One line of the screen; the tone says how to stress it where the terminal can.
struct MonitLine {
  enum class Tone { kPlain, kTitle, kAlert };
  std::string text;
  Tone tone = Tone::kPlain;
  bool operator==(const MonitLine&) const = default;
};

struct MonitLayout {
  size_t width = 80;  // columns (UTF-8 code points)
  size_t height = 24;
  bool utf8 = true;  // box drawing, ▁▂▃ bars; else ASCII
};

// The screen, at most `layout.height` lines of at most `layout.width` code points: a title line,
// the workers with their history, the runs with their progress and failure groups, and as many
// of the last log lines as fit below.
std::vector<MonitLine> render_monit(const MonitSnapshot& snapshot, const WorkerHistory& history,
                                    const MonitLayout& layout);

// How many runs monit shows at most.
constexpr size_t kMonitRuns = 5;
// The runs monit shows of GET /runs "runs" (newest first): those not finished, then the newest
// finished ones, at most kMonitRuns, newest first.
std::vector<api::RunSummary> runs_to_show(const std::vector<api::RunSummary>& runs);

// `text` cut to at most `width` code points.
std::string fit_width(const std::string& text, size_t width);

}  // namespace corral::cli
