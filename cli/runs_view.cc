#include "cli/runs_view.h"

#include <cstdio>
#include <sstream>

#include "cli/format.h"

namespace corral::cli {
namespace {

using nlohmann::json;

const char* const kStates[] = {"passed", "failed", "errored", "cancelled", "running", "queued"};

std::string count_of(const json& run, const char* state) {
  return std::to_string(static_cast<long>(json_number(json_field(run, "counts"), state)));
}

std::string text_or_dash(const json& j, const char* key) {
  std::string s = json_string(j, key);
  return s.empty() ? "-" : s;
}

// The start of the response each failed step kept, under the steps' table, indented.
std::string response_bodies(const json& steps) {
  std::string out;
  for (const auto& s : steps) {
    std::string body = json_string(s, "body");
    if (body.empty()) continue;
    out += "response of step " + std::to_string(static_cast<long>(json_number(s, "step"))) + " (" +
           json_string(s, "name") + "):\n  ";
    for (char c : body) {
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

}  // namespace

std::string render_runs_table(const json& runs, TableStyle style) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : runs) {
    rows.push_back({json_string(r, "id"), json_string(r, "scenario"), json_string(r, "state"),
                    std::to_string(static_cast<long>(json_number(r, "instances"))),
                    count_of(r, "passed"), count_of(r, "failed"), count_of(r, "errored"),
                    count_of(r, "running"), count_of(r, "queued"), text_or_dash(r, "created_at")});
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

bool ProgressGate::due(const json& run, Clock::time_point now, bool final) {
  std::string key = json_string(run, "state") + " " + json_field(run, "counts").dump();
  if (key == last_) return false;
  if (!final && last_at_ && now - *last_at_ < min_gap_) return false;
  last_ = std::move(key);
  last_at_ = now;
  return true;
}

std::string render_progress(const json& run, double elapsed_s) {
  std::ostringstream out;
  out << json_string(run, "id") << "  " << json_string(run, "state") << "  "
      << elapsed_text(elapsed_s) << "  "
      << counted(static_cast<long>(json_number(run, "instances")), "instance", "instances") << ":";
  bool first = true;
  for (const char* s : kStates) {
    long n = static_cast<long>(json_number(json_field(run, "counts"), s));
    if (n == 0) continue;
    out << (first ? " " : ", ") << n << " " << s;
    first = false;
  }
  return out.str();
}

std::string render_run(const json& run) {
  std::ostringstream out;
  out << "run        : " << json_string(run, "id") << "\n"
      << "scenario   : " << json_string(run, "scenario") << "\n"
      << "state      : " << json_string(run, "state") << "\n"
      << "created    : " << text_or_dash(run, "created_at") << "\n"
      << "finished   : " << text_or_dash(run, "finished_at") << "\n"
      << "instances  : " << static_cast<long>(json_number(run, "instances")) << "\n";
  for (const char* s : kStates) {
    out << "  " << s << std::string(11 - std::string(s).size(), ' ') << ": " << count_of(run, s)
        << "\n";
  }
  if (std::string why = json_string(run, "queued_reason"); !why.empty()) {
    out << "  queued because " << why << "\n";
  }
  if (json q = json_field(run, "quarantine"); q.is_object()) {
    out << "quarantined: " << json_string(q, "reason") << "\n";
  }
  if (json_number(run, "priority") > 1) {  // the default, 1, goes unsaid
    out << "priority   : " << static_cast<long>(json_number(run, "priority")) << "\n";
  }
  json d = json_field(run, "duration_ms");
  double finished = 0;
  for (const char* state : {"passed", "failed", "errored", "cancelled"}) {
    finished += json_number(json_field(run, "counts"), state);
  }
  if (finished == 0) {
    out << "duration   : - (no instance has finished)\n";
  } else {
    out << "duration   : p50 " << human_ms(json_number(d, "p50")) << ", p95 "
        << human_ms(json_number(d, "p95")) << ", max " << human_ms(json_number(d, "max")) << "\n";
  }
  json failures = json_field(run, "failures");
  if (failures.is_array() && !failures.empty()) {
    out << "failures   :\n";
    for (const auto& f : failures) {
      out << "  " << static_cast<long>(json_number(f, "count")) << " x step "
          << static_cast<long>(json_number(f, "step")) << " (" << json_string(f, "step_name")
          << "): " << json_string(f, "reason") << "\n";
    }
  }
  return out.str();
}

std::string render_instance(const json& in, TableStyle style) {
  std::ostringstream out;
  out << "instance " << static_cast<long>(json_number(in, "i")) << ": " << json_string(in, "state");
  if (!json_string(in, "reason").empty()) out << " (" << json_string(in, "reason") << ")";
  out << ", " << static_cast<long>(json_number(in, "resumes")) << " resumes";
  json reasons = json_field(in, "resume_reasons");
  if (reasons.is_array() && !reasons.empty()) out << " " << reasons.dump();
  out << "\n";
  json callback = json_field(in, "callback");
  if (callback.is_object()) {
    out << "callback of step " << static_cast<long>(json_number(callback, "step"))
        << ": called, not used yet\n";
  }
  json row = json_field(in, "row");  // a run over data rows
  if (row.is_object()) out << "row: " << row.dump() << "\n";
  if (!json_string(in, "row_error").empty()) out << "row: " << json_string(in, "row_error") << "\n";
  json branches = json_field(in, "branches");
  if (branches.is_array() && !branches.empty()) {
    out << "branches of step " << static_cast<long>(json_number(in, "step")) << ":";
    for (const auto& b : branches) {
      out << " " << json_string(b, "name") << " " << json_string(b, "state");
      if (b.contains("step")) {
        out << " (step " << static_cast<long>(json_number(b, "step")) << " "
            << json_string(b, "step_name") << ")";
      }
      out << (&b == &branches.back() ? "\n" : ";");
    }
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : json_field(in, "steps")) {
    // A step of a parallel step's branch is named after its branch: "eu: GET ...".
    std::string name = json_string(s, "name");
    if (!json_string(s, "branch").empty()) name = json_string(s, "branch") + ": " + name;
    std::string until = s.contains("until_ms") ? human_ms(json_number(s, "until_ms")) : "-";
    long status = static_cast<long>(json_number(s, "status"));
    rows.push_back({std::to_string(static_cast<long>(json_number(s, "step"))),
                    name, json_string(s, "state"),
                    std::to_string(static_cast<long>(json_number(s, "attempts"))),
                    human_ms(json_number(s, "duration_ms")), until,
                    status != 0 ? std::to_string(status) : "-", text_or_dash(s, "reason")});
  }
  out << render_table(
      {"step", "name", "state", "attempts", "took", "until held", "status", "reason"}, rows, style);
  out << response_bodies(json_field(in, "steps"));
  return out.str();
}

}  // namespace corral::cli
