// The JUnit report `corral run --junit` writes, from fixed API answers read through their models
// (shared/api/runs.h).
#include <string>

#include <catch2/catch.hpp>

#include "cli/junit.h"

namespace corral::cli {
namespace {

using nlohmann::json;

json run_of(const std::string& scenario = "job-a") {
  return {{"id", "r7-beef"},
          {"scenario", scenario},
          {"state", "finished"},
          {"instances", 4},
          {"created_at", "2026-11-30T15:00:00Z"},
          {"finished_at", "2026-11-30T15:01:02.5Z"}};
}

json step(int i, const std::string& name, const std::string& state, long ms,
          const std::string& reason = "") {
  json s = {{"step", i},     {"name", name},      {"state", state},
            {"attempts", 1}, {"duration_ms", ms}, {"status", 200}};
  if (!reason.empty()) s["reason"] = reason;
  return s;
}

json instance(int i, const std::string& state, json steps, const std::string& reason = "",
              int next_step = 0) {
  return {{"i", i},
          {"state", state},
          {"step", next_step},
          {"reason", reason},
          {"steps", std::move(steps)}};
}

// A passing instance (2 steps), a failed one (step 1 failed), an errored one (step 0 errored)
// and a cancelled one that never ran a step: GET /runs/<id>/instances?steps=true.
json four_instances() {
  return {
      {"run", "r7-beef"},
      {"instances",
       {instance(0, "passed", {step(0, "start A", "passed", 12), step(1, "wait", "passed", 2345)}),
        instance(1, "failed",
                 {step(0, "start A", "passed", 10),
                  step(1, "wait", "failed", 30000, "until not met after 3 attempts")},
                 "until not met after 3 attempts", 1),
        instance(2, "errored", {step(0, "start A", "errored", 5, "connect: refused")},
                 "connect: refused"),
        instance(3, "cancelled", json::array(), "")}}};
}

// GET /runs/<id>'s answer `j`, read as `corral run --junit` reads it.
api::RunDetail junit_run(const json& j) {
  auto run = api::run_detail_from_json(j);
  INFO((run ? "" : run.status().message()));
  REQUIRE(run.is_ok());
  return *run;
}

// GET /runs/<id>/instances's answer, or just its "instances" array, read the same way.
std::vector<api::InstanceEntry> junit_instances(const json& j) {
  auto answer = api::instances_from_json(j.is_array() ? json{{"instances", j}} : j);
  INFO((answer ? "" : answer.status().message()));
  REQUIRE(answer.is_ok());
  return answer->instances;
}

// The report of `run` and `instances` (answers as above).
std::string junit(const json& run, const json& instances) {
  return render_junit(junit_run(run), junit_instances(instances));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("cli junit: one testsuite per run with the counts of its testcases") {
  const std::string xml = junit(run_of(), four_instances());
  CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites ", 0) == 0);
  CHECK(count(xml, "<testsuite ") == 1);
  CHECK(xml.find("<testsuite name=\"job-a (r7-beef)\" tests=\"6\" failures=\"1\" errors=\"1\" "
                 "skipped=\"1\" time=\"62.500\"") != std::string::npos);
  CHECK(count(xml, "<testcase ") == 6);
  CHECK(count(xml, "<failure ") == 1);
  CHECK(count(xml, "<error ") == 1);
  CHECK(count(xml, "<skipped ") == 1);
  const std::string end = "    </testcase>\n  </testsuite>\n</testsuites>\n";
  CHECK(xml.substr(xml.size() - end.size()) == end);
}

TEST_CASE("cli junit: a run within one second of the clock is timed by its longest instance") {
  json run = run_of();
  run["finished_at"] = run["created_at"];  // the timestamps count whole seconds
  const json instances = json::array(
      {instance(0, "passed", {step(0, "a", "passed", 100), step(1, "b", "passed", 104)}),
       instance(1, "passed", {step(0, "a", "passed", 150)})});
  const std::string xml = junit(run, instances);
  CHECK(count(xml, "time=\"0.204\"") == 2);  // <testsuites> and <testsuite>
}

TEST_CASE("cli junit: the steps an instance never reached after a failure are listed as skipped") {
  json run = run_of();
  run["steps"] = json::array({{{"step", 0}, {"name", "start A"}},
                              {{"step", 1}, {"name", "wait"}},
                              {{"step", 2}, {"name", "check"}}});
  const std::string xml = junit(run, four_instances());
  // Instance 1 failed at step 1: step 2 skipped. Instance 2 errored at step 0: steps 1 and 2.
  CHECK(xml.find("<testcase classname=\"job-a.instance-1\" name=\"2 check\" time=\"0.000\">\n"
                 "      <skipped message=\"not run: step 1 failed\"/>") != std::string::npos);
  CHECK(xml.find("<testcase classname=\"job-a.instance-2\" name=\"1 wait\" time=\"0.000\">\n"
                 "      <skipped message=\"not run: step 0 failed\"/>") != std::string::npos);
  CHECK(xml.find("<testcase classname=\"job-a.instance-2\" name=\"2 check\"") != std::string::npos);
  // Instance 0 passed both of its steps: nothing added (it ran the steps it had).
  CHECK(count(xml, "job-a.instance-0") == 2);
}

TEST_CASE("cli junit: a testcase per step, named by index and name, timed in seconds") {
  const std::string xml = junit(run_of(), four_instances());
  CHECK(xml.find("    <testcase classname=\"job-a.instance-0\" name=\"0 start A\" "
                 "time=\"0.012\"/>\n") != std::string::npos);
  CHECK(xml.find("    <testcase classname=\"job-a.instance-0\" name=\"1 wait\" "
                 "time=\"2.345\"/>\n") != std::string::npos);
  CHECK(xml.find("<testcase classname=\"job-a.instance-1\" name=\"1 wait\" time=\"30.000\">\n"
                 "      <failure message=\"until not met after 3 attempts\" type=\"failed\">") !=
        std::string::npos);
  CHECK(xml.find("<testcase classname=\"job-a.instance-2\" name=\"0 start A\" time=\"0.005\">\n"
                 "      <error message=\"connect: refused\" type=\"errored\">") !=
        std::string::npos);
  CHECK(xml.find("<testcase classname=\"job-a.instance-3\" name=\"not run\" time=\"0.000\">\n"
                 "      <skipped message=\"instance cancelled\"/>\n"
                 "    </testcase>") != std::string::npos);
}

TEST_CASE("cli junit: a failed step's response, as its record kept it, is in the failure's text") {
  json failed = step(1, "wait", "failed", 30000, "expect: status was 503, expected 200");
  failed["status"] = 503;
  failed["body"] = "{\"error\": \"quota <exceeded>\"}\n...";
  json list = json::array({instance(0, "failed", {step(0, "start A", "passed", 10), failed})});
  const std::string xml = junit(run_of(), list);
  CHECK(xml.find("type=\"failed\">step 1 failed after 1 attempt(s), last status 503: expect: "
                 "status was 503, expected 200&#10;response: {&quot;error&quot;: &quot;quota "
                 "&lt;exceeded&gt;&quot;}&#10;...</failure>") != std::string::npos);
}

TEST_CASE("cli junit: an instance that ended badly after passing steps gets a testcase saying so") {
  json list =
      json::array({instance(0, "errored", {step(0, "start A", "passed", 10)},
                            "resumed 3 times and its worker died again (signal SIGKILL)", 1),
                   instance(1, "cancelled", {step(0, "start A", "passed", 10)}, "", 1),
                   instance(2, "errored", json::array(), "engine: out of memory")});
  const std::string xml = junit(run_of(), list);
  CHECK(xml.find("tests=\"5\" failures=\"0\" errors=\"2\" skipped=\"1\"") != std::string::npos);
  CHECK(xml.find("name=\"1 (errored)\" time=\"0.000\">\n      <error message=\"resumed 3 times "
                 "and its worker died again (signal SIGKILL)\"") != std::string::npos);
  CHECK(xml.find("name=\"1 (cancelled)\" time=\"0.000\">\n      <skipped") != std::string::npos);
  CHECK(xml.find("name=\"not run\" time=\"0.000\">\n      <error message=\"engine: out of "
                 "memory\"") != std::string::npos);
}

TEST_CASE("cli junit: hostile reasons and names are escaped, control characters made visible") {
  const std::string hostile = "a<b>&c\"d'e\tf\ng\x01h\x1fi]]>j\xef\xbf\xbek\xc3\xa9";
  json list = json::array({instance(0, "failed", {step(0, hostile, "failed", 1, hostile)})});
  const std::string xml = junit(run_of("s&<x>"), list);
  const std::string escaped =
      "a&lt;b&gt;&amp;c&quot;d&apos;e&#9;f&#10;g\\x01h\\x1fi]]&gt;j\xef\xbf\xbdk\xc3\xa9";
  CHECK(xml.find("<testsuite name=\"s&amp;&lt;x&gt; (r7-beef)\"") != std::string::npos);
  CHECK(xml.find("classname=\"s&amp;&lt;x&gt;.instance-0\" name=\"0 " + escaped + "\"") !=
        std::string::npos);
  CHECK(xml.find("<failure message=\"" + escaped + "\"") != std::string::npos);
  CHECK(xml.find(": " + escaped + "</failure>") != std::string::npos);
  for (char c : xml) {
    const auto u = static_cast<unsigned char>(c);
    INFO(static_cast<int>(u));
    CHECK((u >= 0x20 || c == '\n'));  // the only raw control character is the line break
  }
  CHECK(xml.find("\xef\xbf\xbe") == std::string::npos);
}

TEST_CASE("cli junit: xml_escape leaves plain text and UTF-8 alone") {
  CHECK(xml_escape("plain text 123") == "plain text 123");
  CHECK(xml_escape("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x84") ==
        "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x84");
  CHECK(xml_escape("") == "");
}

TEST_CASE("cli junit: an empty instances answer gives a valid empty suite") {
  for (const json& answer :
       {json{{"run", "r7-beef"}, {"instances", json::array()}}, json::array()}) {
    const std::string xml = junit(run_of(), answer);
    CHECK(xml.find("tests=\"0\" failures=\"0\" errors=\"0\" skipped=\"0\"") != std::string::npos);
    CHECK(count(xml, "<testcase") == 0);
  }
  CHECK(junit(json::object(), json::array()).find("time=\"0.000\"") != std::string::npos);
}

TEST_CASE("cli junit: a malformed instances answer is an error, not a report") {
  for (const json& answer : {json::object(), json::array(), json("nonsense")}) {
    CHECK_FALSE(api::instances_from_json(answer).is_ok());
  }
}

}  // namespace
}  // namespace corral::cli
