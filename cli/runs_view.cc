#include "cli/runs_view.h"

#include <cstdio>
#include <sstream>

#include "cli/format.h"

namespace corral::cli {
namespace {

using api::RunCounts;

// The states in the order the CLI lists them.
const std::pair<const char*, uint32_t RunCounts::*> kStates[] = {
    {"passed", &RunCounts::passed},   {"failed", &RunCounts::failed},
    {"errored", &RunCounts::errored}, {"cancelled", &RunCounts::cancelled},
    {"running", &RunCounts::running}, {"queued", &RunCounts::queued}};

std::string dash_if_empty(const std::string& s) { return s.empty() ? "-" : s; }
std::string dash_if_empty(const std::optional<std::string>& s) {
  return dash_if_empty(s.value_or(""));
}

// The start of the response each failed step kept, under the steps' table, indented.
std::string response_bodies(const std::vector<api::StepEntry>& steps) {
  std::string out;
  for (const api::StepEntry& s : steps) {
    if (s.body.empty()) continue;
    out += "response of step " + std::to_string(s.step) + " (" + s.name + "):\n  ";
    for (char c : s.body) {
      if (c == '\n') {
        out += "\n  ";
      } else if (c != '\r') {
        out += c;
      }
    }
    out += "\n";
  }
  return out;
}

// "branches of step 1: eu passed; us running (step 6 wait)\n", or "" at no parallel step.
std::string branches_line(const api::InstanceEntry& in) {
  if (!in.branches || in.branches->empty()) return "";
  std::string out = "branches of step " + std::to_string(in.step) + ":";
  for (const api::BranchEntry& b : *in.branches) {
    out += " " + b.name + " " + b.state;
    if (b.step) out += " (step " + std::to_string(*b.step) + " " + b.step_name.value_or("") + ")";
    out += &b == &in.branches->back() ? "\n" : ";";
  }
  return out;
}

std::vector<std::string> step_cells(const api::StepEntry& s) {
  // A step of a parallel step's branch is named after its branch: "eu: GET ...".
  std::string name = s.branch.empty() ? s.name : s.branch + ": " + s.name;
  std::string until = s.until_ms ? human_ms(static_cast<double>(*s.until_ms)) : "-";
  return {std::to_string(s.step),
          name,
          s.state,
          std::to_string(s.attempts),
          human_ms(static_cast<double>(s.duration_ms)),
          until,
          s.status != 0 ? std::to_string(s.status) : "-",
          dash_if_empty(s.reason)};
}

}  // namespace

std::string render_runs_table(const std::vector<api::RunSummary>& runs, TableStyle style) {
  std::vector<std::vector<std::string>> rows;
  for (const api::RunSummary& r : runs) {
    const RunCounts& c = r.counts;
    rows.push_back({r.id, r.scenario, r.state, std::to_string(r.instances),
                    std::to_string(c.passed), std::to_string(c.failed), std::to_string(c.errored),
                    std::to_string(c.running), std::to_string(c.queued),
                    dash_if_empty(r.created_at)});
  }
  return render_table({"run", "scenario", "state", "instances", "passed", "failed", "errored",
                       "running", "queued", "created"},
                      rows, style);
}

std::string elapsed_text(double seconds) {
  const long s = seconds > 0 ? static_cast<long>(seconds) : 0;
  char buf[48];
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%lds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm%02lds", s / 3600, s / 60 % 60, s % 60);
  }
  return buf;
}

bool ProgressGate::due(const api::RunSummary& run, Clock::time_point now, bool final) {
  if (last_ && last_->first == run.state && last_->second == run.counts) return false;
  if (!final && last_at_ && now - *last_at_ < min_gap_) return false;
  last_ = {run.state, run.counts};
  last_at_ = now;
  return true;
}

std::string render_progress(const api::RunSummary& run, double elapsed_s) {
  std::ostringstream out;
  out << run.id << "  " << run.state << "  " << elapsed_text(elapsed_s) << "  "
      << counted(run.instances, "instance", "instances") << ":";
  bool first = true;
  for (const auto& [state, count] : kStates) {
    const uint32_t n = run.counts.*count;
    if (n == 0) continue;
    out << (first ? " " : ", ") << n << " " << state;
    first = false;
  }
  return out.str();
}

std::string render_run(const api::RunDetail& run) {
  std::ostringstream out;
  out << "run        : " << run.id << "\n"
      << "scenario   : " << run.scenario << "\n"
      << "state      : " << run.state << "\n"
      << "created    : " << dash_if_empty(run.created_at) << "\n"
      << "finished   : " << dash_if_empty(run.finished_at) << "\n"
      << "instances  : " << run.instances << "\n";
  for (const auto& [state, count] : kStates) {
    out << "  " << state << std::string(11 - std::string(state).size(), ' ') << ": "
        << run.counts.*count << "\n";
  }
  if (run.queued_reason && !run.queued_reason->empty()) {
    out << "  queued because " << *run.queued_reason << "\n";
  }
  if (run.quarantine) out << "quarantined: " << run.quarantine->reason << "\n";
  if (run.priority > 1)
    out << "priority   : " << run.priority << "\n";  // 1, the default, goes unsaid
  const RunCounts& c = run.counts;
  if (uint64_t{c.passed} + c.failed + c.errored + c.cancelled == 0) {
    out << "duration   : - (no instance has finished)\n";
  } else {
    const api::RunDuration& d = run.duration_ms;
    out << "duration   : p50 " << human_ms(static_cast<double>(d.p50)) << ", p95 "
        << human_ms(static_cast<double>(d.p95)) << ", max " << human_ms(static_cast<double>(d.max))
        << "\n";
  }
  if (!run.failures.empty()) {
    out << "failures   :\n";
    for (const api::RunFailure& f : run.failures) {
      out << "  " << f.count << " x step " << f.step << " (" << f.step_name << "): " << f.reason
          << "\n";
    }
  }
  return out.str();
}

std::string render_instance(const api::InstanceEntry& in, TableStyle style) {
  std::ostringstream out;
  out << "instance " << in.i << ": " << in.state;
  if (!in.reason.empty()) out << " (" << in.reason << ")";
  out << ", " << in.resumes << " resumes";
  if (!in.resume_reasons.empty()) out << " " << nlohmann::json(in.resume_reasons).dump();
  out << "\n";
  if (in.callback) out << "callback of step " << in.callback->step << ": called, not used yet\n";
  if (in.row && in.row->is_object()) out << "row: " << in.row->dump() << "\n";  // a data run
  if (!in.row_error.empty()) out << "row: " << in.row_error << "\n";
  if (!in.trace_id.empty()) out << "trace: " << in.trace_id << " (each request's traceparent)\n";
  out << branches_line(in);
  std::vector<std::vector<std::string>> rows;
  const std::vector<api::StepEntry> none;
  const std::vector<api::StepEntry>& steps = in.steps ? *in.steps : none;
  for (const api::StepEntry& s : steps) rows.push_back(step_cells(s));
  out << render_table(
      {"step", "name", "state", "attempts", "took", "until held", "status", "reason"}, rows, style);
  out << response_bodies(steps);
  return out.str();
}

}  // namespace corral::cli
