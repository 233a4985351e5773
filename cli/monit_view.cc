#include "cli/monit_view.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "cli/runs_view.h"
#include "cli/status_view.h"
#include "cli/table.h"
#include "config/config.h"

namespace corral::cli {
namespace {

using Tone = MonitLine::Tone;

constexpr size_t kValueWidth = 7;      // "123.4mb": a value before its sparkline
constexpr size_t kProgressWidth = 20;  // the bar of a run's progress
constexpr size_t kFailuresPerRun = 3;  // failure groups shown under the runs

void add_text(std::vector<MonitLine>& out, const std::string& text, Tone tone = Tone::kPlain) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back({line, tone});
}

std::string percent_text(std::optional<double> percent) {
  if (!percent) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, *percent < 10 ? "%.1f%%" : "%.0f%%", *percent);
  return buf;
}

// A value and its sparkline, the value padded so that the sparklines of a column line up.
std::string with_history(const std::string& value, const std::vector<std::optional<double>>& series,
                         double top, size_t spark_width, bool utf8) {
  const size_t w = display_width(value);
  std::string cell = value + std::string(w < kValueWidth ? kValueWidth - w : 0, ' ');
  if (spark_width == 0) return cell;
  return cell + " " + sparkline(series, top, spark_width, utf8);
}

std::vector<std::string> worker_row(const api::WorkerEntry& w, const WorkerHistory& history,
                                    size_t spark_width, bool utf8) {
  const long slot = w.slot;
  const bool alive = w.alive();
  const auto cpu = history.series(slot, &WorkerSample::cpu_percent);
  const auto rss = history.series(slot, &WorkerSample::rss_bytes);
  const auto lag = history.series(slot, &WorkerSample::loop_lag_ms);
  const auto active = history.series(slot, &WorkerSample::active);
  const std::string rss_text = alive ? human_bytes(w.rss_bytes) : "-";
  const std::string lag_text = alive ? human_ms(w.loop_lag_ms) : "-";
  // Bars scale to the window's largest value, with a floor where small values are noise.
  return {std::to_string(slot),
          alive ? std::to_string(w.pid) : "-",
          w.state.empty() ? "?" : w.state,
          alive ? human_duration(w.uptime_s) : "-",
          std::to_string(w.restarts),
          with_history(percent_text(alive && !cpu.empty() ? cpu.back() : std::nullopt), cpu,
                       std::max(100.0, largest(cpu)), spark_width, utf8),
          with_history(rss_text, rss, largest(rss), spark_width, utf8),
          with_history(lag_text, lag, std::max(10.0, largest(lag)), spark_width, utf8),
          with_history(std::to_string(w.active), active, std::max(1.0, largest(active)),
                       spark_width, utf8)};
}

std::string workers_table(const MonitSnapshot& s, const WorkerHistory& history, size_t spark_width,
                          bool utf8) {
  std::vector<std::vector<std::string>> rows;
  for (const api::WorkerEntry& w : s.workers)
    rows.push_back(worker_row(w, history, spark_width, utf8));
  return render_table(
      {"slot", "pid", "state", "uptime", "restarts", "cpu", "memory", "loop lag", "active"}, rows,
      utf8 ? TableStyle::kBox : TableStyle::kAscii);
}

void add_workers(std::vector<MonitLine>& out, const MonitSnapshot& s, const WorkerHistory& history,
                 const MonitLayout& layout) {
  out.push_back({"Workers", Tone::kTitle});
  // The sparklines share what the table leaves of the screen's width, up to the whole history.
  const std::string bare = workers_table(s, history, 0, layout.utf8);
  const size_t bare_width = display_width(bare.substr(0, bare.find('\n')));
  const size_t room = layout.width > bare_width ? (layout.width - bare_width) / 4 : 0;
  const size_t spark_width = room > 3 ? std::min(room - 1, WorkerHistory::kLength) : 0;
  add_text(out, spark_width == 0 ? bare : workers_table(s, history, spark_width, layout.utf8));
  for (const api::WorkerEntry& w : s.workers) add_text(out, worker_note(w), Tone::kAlert);
}

std::string progress_cell(const api::RunSummary& run, bool utf8) {
  const api::RunCounts& c = run.counts;
  const long total = run.instances;
  const long done = long{c.passed} + c.failed + c.errored + c.cancelled;
  const size_t filled =
      total > 0 ? std::min<size_t>(kProgressWidth, kProgressWidth * done / total) : 0;
  std::string bar;
  for (size_t i = 0; i < kProgressWidth; ++i) {
    bar += i < filled ? (utf8 ? "█" : "#") : (utf8 ? "░" : ".");
  }
  const long percent = total > 0 ? 100 * done / total : 0;
  return bar + " " + std::to_string(done) + "/" + std::to_string(total) + " " +
         std::to_string(percent) + "%";
}

std::string run_elapsed(const api::RunSummary& run, WallClock::time_point now) {
  auto created = parse_utc_timestamp(run.created_at.value_or(""));
  if (!created) return "-";
  auto finished = parse_utc_timestamp(run.finished_at.value_or(""));
  return elapsed_text(std::chrono::duration<double>(finished.value_or(now) - *created).count());
}

std::vector<std::string> run_row(const api::RunSummary& run, WallClock::time_point now, bool utf8) {
  const api::RunCounts& c = run.counts;
  return {run.id,
          run.scenario,
          run.state,
          progress_cell(run, utf8),
          std::to_string(c.passed),
          std::to_string(c.failed),
          std::to_string(c.errored),
          std::to_string(c.running),
          std::to_string(c.queued),
          run_elapsed(run, now)};
}

// "r1-3f2a: 2 x step 1 (wait for A): until not met after 3 attempts", the largest groups first.
void add_failures(std::vector<MonitLine>& out, const std::string& id,
                  const std::vector<api::RunFailure>& failures) {
  for (size_t k = 0; k < failures.size() && k < kFailuresPerRun; ++k) {
    const api::RunFailure& f = failures[k];
    out.push_back({id + ": " + std::to_string(f.count) + " x step " + std::to_string(f.step) +
                       " (" + f.step_name + "): " + f.reason,
                   Tone::kAlert});
  }
  if (failures.size() > kFailuresPerRun) {
    out.push_back({id + ": " + std::to_string(failures.size() - kFailuresPerRun) +
                       " more failure groups (corral show " + id + ")",
                   Tone::kAlert});
  }
}

void add_runs(std::vector<MonitLine>& out, const MonitSnapshot& s, const MonitLayout& layout) {
  out.push_back({"Runs", Tone::kTitle});
  const std::vector<api::RunSummary> shown = runs_to_show(s.runs);
  if (shown.empty()) {
    out.push_back({"no runs yet"});
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const api::RunSummary& run : shown) rows.push_back(run_row(run, s.now, layout.utf8));
  add_text(out, render_table({"run", "scenario", "state", "progress", "passed", "failed", "errored",
                              "running", "queued", "elapsed"},
                             rows, layout.utf8 ? TableStyle::kBox : TableStyle::kAscii));
  for (const api::RunSummary& run : shown) {
    auto f = s.failures.find(run.id);
    if (f != s.failures.end()) add_failures(out, f->first, f->second);
  }
}

// Three lines: the daemon, then how monit refreshes, or why the daemon does not answer.
void add_title(std::vector<MonitLine>& out, const MonitSnapshot& s) {
  const std::string every = config::format_duration_ms(static_cast<uint64_t>(s.interval.count()));
  out.push_back({"corral monit · " + render_summary_line(s.health, s.workers), Tone::kTitle});
  if (s.problem.empty()) {
    out.push_back({"refreshing every " + every + " · q or Ctrl-C quits"});
    out.push_back({});
    return;
  }
  const double age = std::chrono::duration<double>(s.now - s.answered_at).count();
  out.push_back(
      {s.problem + " for " + human_duration(age) + " · retrying every " + every, Tone::kAlert});
  out.push_back({s.problem_detail});
}

void add_logs(std::vector<MonitLine>& out, const MonitSnapshot& s, size_t room) {
  if (room < 2) return;
  out.push_back({"Logs · " + s.logs_dir, Tone::kTitle});
  if (s.log_lines.empty()) {
    out.push_back({"no log lines yet"});
    return;
  }
  const size_t n = std::min(room - 1, s.log_lines.size());
  for (size_t i = s.log_lines.size() - n; i < s.log_lines.size(); ++i) {
    out.push_back({s.log_lines[i]});
  }
}

}  // namespace

std::vector<MonitLine> render_monit(const MonitSnapshot& s, const WorkerHistory& history,
                                    const MonitLayout& layout) {
  std::vector<MonitLine> out;
  add_title(out, s);
  add_workers(out, s, history, layout);
  out.push_back({});
  add_runs(out, s, layout);
  out.push_back({});
  add_logs(out, s, layout.height > out.size() ? layout.height - out.size() : 0);
  if (out.size() > layout.height) out.resize(layout.height);
  for (MonitLine& line : out) line.text = fit_width(line.text, layout.width);
  return out;
}

std::vector<api::RunSummary> runs_to_show(const std::vector<api::RunSummary>& runs) {
  std::vector<bool> chosen(runs.size(), false);
  size_t n = 0;
  // Unfinished runs first, then finished ones, each pass newest first.
  for (bool finished : {false, true}) {
    for (size_t i = 0; i < runs.size() && n < kMonitRuns; ++i) {
      const std::string& state = runs[i].state;
      if ((state == "finished" || state == "cancelled") == finished) {
        chosen[i] = true;
        ++n;
      }
    }
  }
  std::vector<api::RunSummary> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (chosen[i]) out.push_back(runs[i]);
  }
  return out;
}

std::string fit_width(const std::string& text, size_t width) {
  size_t points = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    // A byte that starts a code point (not a UTF-8 continuation byte).
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && points++ == width) {
      return text.substr(0, i);
    }
  }
  return text;
}

}  // namespace corral::cli
