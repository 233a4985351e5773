// JUnit XML for a finished run, as CI servers (Jenkins, GitLab, GitHub reporters) read it.
// Pure functions over the runs API's answers (shared/api/runs.h); any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "shared/api/runs.h"

namespace corral::cli {

// The whole document: <testsuites> holding one <testsuite name="<scenario> (<run id>)"> with
//   - one <testcase classname="<scenario>.instance-<i>" name="<step> <step name>"
//     time="<seconds, 3 decimals>"> per step record of each instance, with <failure> for a
//     failed step and <error> for an errored one (message = the step's reason), then, after a
//     failed or errored one, a <skipped/> testcase for each of the scenario's own steps the
//     instance never reached (from the run's "steps");
//   - for an instance with no step record: one testcase "not run", <skipped/> when it was
//     cancelled, queued or still running, else <failure>/<error> with the instance's reason
//     (an engine error before the first step);
//   - for an instance that ended failed, errored or cancelled after steps that all passed (its
//     worker died too often, a cancel between steps): one more testcase "<next step> (<state>)"
//     saying so, so the counts never read greener than the exit code.
// `run` is GET /runs/<id>; `instances` is GET /runs/<id>/instances?steps=true's "instances".
std::string render_junit(const api::RunDetail& run,
                         const std::vector<api::InstanceEntry>& instances);

// One testcase of a JUnit document.
struct JunitCase {
  enum class Outcome { kPassed, kFailed, kErrored, kSkipped };
  std::string classname;
  std::string name;
  double seconds = 0;
  Outcome outcome = Outcome::kPassed;
  std::string message;  // why, for anything but kPassed
  std::string detail;   // element text under <failure>/<error>
};

// A document of one <testsuite name=`suite`> (with `timestamp` when it is not empty) holding
// `cases`, with their counts.
std::string render_junit_suite(const std::string& suite, const std::string& timestamp,
                               double seconds, const std::vector<JunitCase>& cases);

// `text` made safe inside an XML 1.0 attribute value or element: & < > " ' become entities,
// tab, newline and carriage return become character references (attribute normalisation would
// eat them), and what XML 1.0 cannot carry at all (other C0 controls, U+FFFE, U+FFFF) becomes
// a visible "\xNN" / U+FFFD.
std::string xml_escape(std::string_view text);

}  // namespace corral::cli
