#include "cli/junit.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "cli/format.h"

namespace corral::cli {
namespace {

using Outcome = JunitCase::Outcome;
using TestCase = JunitCase;

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", s > 0 ? s : 0.0);
  return buf;
}

Outcome outcome_of(const std::string& state) {
  if (state == "passed") return Outcome::kPassed;
  if (state == "failed") return Outcome::kFailed;
  if (state == "errored") return Outcome::kErrored;
  return Outcome::kSkipped;  // cancelled, queued, running
}

TestCase step_case(const api::StepEntry& s) {
  TestCase tc;
  tc.name = std::to_string(s.step) + " " + s.name;
  tc.seconds = static_cast<double>(s.duration_ms) / 1000.0;
  tc.outcome = outcome_of(s.state);
  if (tc.outcome == Outcome::kPassed) return tc;
  tc.message = s.reason.empty() ? s.state : s.reason;  // a step's reason is absent when empty
  tc.detail = "step " + std::to_string(s.step) + " " + s.state + " after " +
              std::to_string(s.attempts) + " attempt(s)";
  if (s.status != 0) tc.detail += ", last status " + std::to_string(s.status);
  tc.detail += ": " + tc.message;
  if (!s.body.empty()) tc.detail += "\nresponse: " + s.body;
  return tc;
}

// A skipped testcase for each of the scenario's own steps (`scenario_steps`: GET /runs/<id>'s
// "steps") after the last one the instance has a record of: a step failed before them.
void add_not_reached(const std::vector<api::RunStep>& scenario_steps, long last_step,
                     std::vector<TestCase>& cases) {
  for (const api::RunStep& s : scenario_steps) {
    if (static_cast<long>(s.step) <= last_step) continue;
    TestCase tc;
    tc.name = std::to_string(s.step) + " " + s.name;
    tc.outcome = Outcome::kSkipped;
    tc.message = "not run: step " + std::to_string(last_step) + " failed";
    cases.push_back(std::move(tc));
  }
}

// The testcases of one instance (see the header for the cases without a failing step record).
std::vector<TestCase> instance_cases(const api::InstanceEntry& in,
                                     const std::vector<api::RunStep>& scenario_steps) {
  std::vector<TestCase> cases;
  bool step_failed = false;
  long last_step = -1;
  if (in.steps) {
    for (const api::StepEntry& s : *in.steps) {
      cases.push_back(step_case(s));
      step_failed = step_failed || cases.back().outcome != Outcome::kPassed;
      last_step = std::max(last_step, static_cast<long>(s.step));
    }
  }
  if (step_failed) add_not_reached(scenario_steps, last_step, cases);
  const std::string& state = in.state;
  const Outcome end = outcome_of(state);
  if (!cases.empty() &&
      (end == Outcome::kPassed || step_failed || state == "running" || state == "queued")) {
    return cases;
  }
  TestCase tc;
  tc.name = cases.empty() ? "not run" : std::to_string(in.step) + " (" + state + ")";
  tc.outcome = end == Outcome::kPassed ? Outcome::kSkipped : end;  // passed with no step: odd
  tc.message = in.reason.empty() ? "instance " + state : in.reason;
  tc.detail = "instance " + state + ": " + tc.message;
  cases.push_back(std::move(tc));
  return cases;
}

void append_case(std::string& out, const TestCase& tc) {
  out += "    <testcase classname=\"" + xml_escape(tc.classname) + "\" name=\"" +
         xml_escape(tc.name) + "\" time=\"" + seconds_text(tc.seconds) + "\"";
  const char* tag = tc.outcome == Outcome::kFailed    ? "failure"
                    : tc.outcome == Outcome::kErrored ? "error"
                    : tc.outcome == Outcome::kSkipped ? "skipped"
                                                      : nullptr;
  if (tag == nullptr) {
    out += "/>\n";
    return;
  }
  out += ">\n      <" + std::string(tag) + " message=\"" + xml_escape(tc.message) + "\"";
  if (tc.outcome == Outcome::kSkipped) {
    out += "/>\n";
  } else {
    out += " type=\"" + std::string(tag == std::string("failure") ? "failed" : "errored") + "\">" +
           xml_escape(tc.detail) + "</" + tag + ">\n";
  }
  out += "    </testcase>\n";
}

double run_seconds(const api::RunSummary& run) {
  auto from = parse_utc_timestamp(run.created_at.value_or(""));
  auto to = parse_utc_timestamp(run.finished_at.value_or(""));
  if (!from || !to) return 0;
  return std::chrono::duration<double>(*to - *from).count();
}

// Appends the UTF-8 sequence starting at text[i] (a lead byte >= 0x80) and returns its length.
size_t append_utf8(std::string& out, std::string_view text, size_t i) {
  const auto b = static_cast<unsigned char>(text[i]);
  const size_t n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  std::string_view seq = text.substr(i, n);
  if (seq == "\xef\xbf\xbe" || seq == "\xef\xbf\xbf") {
    out += "\xef\xbf\xbd";  // U+FFFE and U+FFFF are not XML characters
  } else {
    out += seq;
  }
  return seq.size();
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      i += append_utf8(out, text, i);
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':
        out += "&#9;";
        break;
      case '\n':
        out += "&#10;";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        if (u < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", u);
          out += buf;
        } else {
          out += c;
        }
    }
    ++i;
  }
  return out;
}

std::string render_junit_suite(const std::string& suite, const std::string& timestamp,
                               double seconds, const std::vector<JunitCase>& cases) {
  long failures = 0, errors = 0, skipped = 0;
  std::string body;
  for (const TestCase& tc : cases) {
    failures += tc.outcome == Outcome::kFailed;
    errors += tc.outcome == Outcome::kErrored;
    skipped += tc.outcome == Outcome::kSkipped;
    append_case(body, tc);
  }
  const std::string counts = "tests=\"" + std::to_string(cases.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"" + std::to_string(errors) +
                             "\" skipped=\"" + std::to_string(skipped) + "\" time=\"" +
                             seconds_text(seconds) + "\"";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites " + counts + ">\n";
  out += "  <testsuite name=\"" + xml_escape(suite) + "\" " + counts;
  if (!timestamp.empty()) out += " timestamp=\"" + xml_escape(timestamp) + "\"";
  out += ">\n" + body + "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string render_junit(const api::RunDetail& run,
                         const std::vector<api::InstanceEntry>& instances) {
  std::vector<JunitCase> cases;
  for (const api::InstanceEntry& in : instances) {
    const std::string classname = run.scenario + ".instance-" + std::to_string(in.i);
    for (TestCase& tc : instance_cases(in, run.steps)) {
      tc.classname = classname;
      cases.push_back(std::move(tc));
    }
  }
  // The run's timestamps count whole seconds: a run shorter than one can show 0 s. Its time is
  // at least that of its longest instance (the sum of that instance's steps).
  double seconds = run_seconds(run);
  std::map<std::string, double> per_instance;
  for (const TestCase& tc : cases)
    seconds = std::max(seconds, per_instance[tc.classname] += tc.seconds);
  return render_junit_suite(run.scenario + " (" + run.id + ")", run.created_at.value_or(""),
                            seconds, cases);
}

}  // namespace corral::cli
