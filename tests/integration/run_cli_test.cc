// `corral run` as a CI job uses it: against the real daemon and a real corral-target, checking
// the exit code, the progress and summary it prints, and the JUnit file it writes (parsed by
// python3's xml.etree, as a CI server would parse it).
#include <catch2/catch.hpp>

#include <signal.h>
#include <stdio.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "shared/trace_context.h"
#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"

using namespace corral::test;

namespace {

// Start a job, poll it every 100 ms until done, breathe. The poll step's name is hostile to XML.
const char* const kHostileName = "wait <for> A & \"it\"\x01";

Json job_scenario(const Json& polls_to_done) {
  Json s = Json::parse(R"({
    "name": "job-a",
    "steps": [
      {"name": "start A", "request": {"method": "POST", "url": "{{base}}/jobs", "json": {}},
       "expect": [{"status": 201}], "capture": {"job": {"json": "/id"}}},
      {"request": {"url": "{{base}}/jobs/{{job}}"},
       "poll": {"every": "100ms", "timeout": "1m",
                "until": [{"json": "/status", "equals": "done"}]}},
      {"name": "breathe", "sleep": "50ms"}
    ]})");
  s["steps"][0]["request"]["json"]["polls_to_done"] = polls_to_done;
  s["steps"][1]["name"] = kHostileName;
  return s;
}

std::string write_scenario(const TempHome& home, const std::string& name, const Json& scenario) {
  std::ofstream(home.file(name)) << scenario.dump();
  return home.file(name);
}

// What python3's xml.etree makes of a JUnit file: null when it does not parse.
Json parse_junit(const std::string& path) {
  const std::string script =
      "import json, sys, xml.etree.ElementTree as E\n"
      "root = E.parse(sys.argv[1]).getroot()\n"
      "suites = root.findall('testsuite')\n"
      "cases = root.findall('testsuite/testcase')\n"
      "print(json.dumps({'root': root.tag, 'suites': [dict(s.attrib) for s in suites],\n"
      "  'testcases': len(cases),\n"
      "  'failures': len(root.findall('testsuite/testcase/failure')),\n"
      "  'errors': len(root.findall('testsuite/testcase/error')),\n"
      "  'skipped': len(root.findall('testsuite/testcase/skipped')),\n"
      "  'names': sorted(set(c.get('name') for c in cases)),\n"
      "  'times': [float(c.get('time')) for c in cases]}))\n";
  const std::string script_path = path + ".py";
  std::ofstream(script_path) << script;
  FILE* p = ::popen(("python3 '" + script_path + "' '" + path + "' 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int rc = ::pclose(p);
  INFO(out);
  CHECK(rc == 0);
  return rc == 0 ? Json::parse(out, nullptr, false) : Json();
}

// "corral: run r3-2f3a: ..." -> "r3-2f3a".
std::string run_id_in(const std::string& out) {
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("corral: run ([^:]+):")));
  return m[1];
}

}  // namespace

TEST_CASE(
    "run cli: a passing run exits 0, shows timed progress and writes a JUnit testcase per step") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  // Instance i needs i polls, so instances finish one by one over ~3 s and counts keep changing.
  const std::string file = write_scenario(home, "good.json", job_scenario("{{instance}}"));
  const std::string junit = home.file("good.xml");
  const auto t0 = Clock::now();
  CliResult r = run_cli({"run", file, "-n", "30", "--var", "base=" + api.base(), "--junit", junit},
                        home.path());
  const double took_s = std::chrono::duration<double>(Clock::now() - t0).count();
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);

  // Off a TTY: one line per change of the counts, at most one a second, each with the elapsed
  // time; the last says finished.
  std::vector<std::string> progress;
  std::istringstream lines(r.out);
  const std::regex line_re("r\\S+  (queued|running|finished)  \\d+s  30 instances:.*");
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, line_re)) progress.push_back(line);
  }
  REQUIRE(progress.size() >= 2);
  CHECK(progress.size() <= static_cast<size_t>(took_s) + 2);
  CHECK_THAT(progress.back(), Catch::Contains("finished") && Catch::EndsWith(": 30 passed"));
  CHECK_THAT(r.out, Catch::Contains("  passed     : 30"));

  Json x = parse_junit(junit);
  REQUIRE(x.is_object());
  CHECK(x["root"] == "testsuites");
  REQUIRE(x["suites"].size() == 1);
  const std::string id = run_id_in(r.out);
  CHECK(x["suites"][0]["name"] == "job-a (" + id + ")");
  CHECK(x["suites"][0]["tests"] == "90");
  CHECK(x["suites"][0]["failures"] == "0");
  CHECK(x["testcases"] == 90);  // 30 instances x 3 steps
  CHECK(x["failures"] == 0);
  CHECK(x["errors"] == 0);
  CHECK(x["skipped"] == 0);
  CHECK(x["names"] == Json({"0 start A", "1 wait <for> A & \"it\"\\x01", "2 breathe"}));
  double longest = 0;
  for (const auto& t : x["times"]) longest = std::max(longest, t.get<double>());
  CHECK(longest >= 2.0);  // the last instance polled ~29 times, 100 ms apart

  // The instance's steps, addressed as RUN/N.
  CliResult show = run_cli({"show", id + "/29"}, home.path());
  INFO(show.describe());
  CHECK(show.exit_code == 0);
  CHECK_THAT(show.out, Catch::StartsWith("instance 29: passed"));
  CHECK_THAT(show.out, Catch::Contains("| 29       |"));  // attempts of the poll step
  // The trace its requests carried (the worker derives it as the master does: unit-tested).
  CHECK_THAT(show.out, Catch::Contains("\ntrace: " + corral::instance_trace(id, 29) + " "));
  CHECK(run_cli({"show", id + "/"}, home.path()).exit_code == 2);
  // Not a number: a key, which a run without data rows does not have.
  CliResult by_key = run_cli({"show", id + "/x"}, home.path());
  CHECK(by_key.exit_code == 1);
  CHECK_THAT(by_key.err, Catch::Contains("has no instance x"));
}

TEST_CASE("run cli: a failing run exits 1, groups its failures and reports each in JUnit") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json failing = job_scenario(2);
  failing["steps"][1]["poll"]["max_attempts"] = 1;  // the job needs two polls: this fails
  const std::string file = write_scenario(home, "bad.json", failing);
  const std::string junit = home.file("bad.xml");
  CliResult r = run_cli({"run", file, "-n", "4", "--var", "base=" + api.base(), "--junit", junit},
                        home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("  failed     : 4"));
  CHECK_THAT(r.out, Catch::Contains("  4 x step 1 (" + std::string(kHostileName) +
                                    "): until not met after 1 attempts"));
  Json x = parse_junit(junit);
  REQUIRE(x.is_object());
  REQUIRE(x["suites"].size() == 1);
  CHECK(x["suites"][0]["tests"] == "12");
  CHECK(x["suites"][0]["failures"] == "4");
  CHECK(x["suites"][0]["errors"] == "0");
  CHECK(x["suites"][0]["skipped"] == "4");
  CHECK(x["testcases"] == 12);  // start A passed, the poll failed, breathe never ran (skipped)
  CHECK(x["skipped"] == 4);
  CHECK(x["failures"] == 4);
  CHECK(x["errors"] == 0);
}

TEST_CASE("run cli: an invalid scenario or command line exits 2 and starts nothing") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json invalid = job_scenario(1);
  invalid["steps"][1]["poll"]["every"] = 10;
  const std::string file = write_scenario(home, "invalid.json", invalid);
  const std::string junit = home.file("invalid.xml");
  CliResult r =
      run_cli({"run", file, "--var", "base=http://127.0.0.1:1", "--junit", junit}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("invalid.json: scenario.steps[1].poll.every: expected a "
                                    "duration like \"10s\", got 10"));
  CHECK_FALSE(std::filesystem::exists(junit));

  // An environment variable or a secret the daemon does not have is refused at submission.
  Json unset_env = job_scenario(1);
  unset_env["steps"][0]["request"]["headers"] = {{"X-Token", "{{env.CORRAL_IT_NEVER_SET}}"}};
  CliResult env = run_cli(
      {"run", write_scenario(home, "env.json", unset_env), "--var", "base=http://127.0.0.1:1"},
      home.path());
  INFO(env.describe());
  CHECK(env.exit_code == 2);
  CHECK_THAT(env.err, Catch::Contains("scenario.steps[0].request.headers.X-Token: environment "
                                      "variable \"CORRAL_IT_NEVER_SET\" is not set"));
  Json unknown_secret = job_scenario(1);
  unknown_secret["steps"][0]["request"]["headers"] = {{"X-Token", "{{secret.NOPE}}"}};
  CliResult secret = run_cli({"run", write_scenario(home, "secret.json", unknown_secret), "--var",
                              "base=http://127.0.0.1:1"},
                             home.path());
  INFO(secret.describe());
  CHECK(secret.exit_code == 2);
  CHECK_THAT(secret.err, Catch::Contains("unknown secret \"NOPE\""));

  std::ofstream(home.file("garbage.json")) << "{not json";
  std::ofstream(home.file("twice.json"))
      << R"({"name": "t", "steps": [{"sleep": "1s", "sleep": "2s"}]})";
  const std::string good = write_scenario(home, "good.json", job_scenario(1));
  struct Case {
    std::vector<std::string> args;
    const char* error;
  };
  for (const Case& c :
       {Case{{"run", home.file("missing.json")}, "cannot read"},
        Case{{"run", home.file("garbage.json")}, "garbage.json: line 1, column 3: syntax error"},
        Case{{"run", home.file("twice.json")},
             "twice.json: steps[0]: the key \"sleep\" appears twice"},
        Case{{"run", good, "--detach", "--junit", junit}, "excludes"},
        Case{{"run", good, "--var", "=1"}, "expected NAME=VALUE"},
        Case{{"run", good, "--junit", home.file("no/such/dir.xml")}, "no dir"}}) {
    CliResult bad = run_cli(c.args, home.path());
    INFO(bad.describe());
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains(c.error));
  }
  CHECK(d.api("GET", "/runs").json["runs"].empty());
}

TEST_CASE("run cli: every scenario in examples/ passes against corral-target") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  int ran = 0;
  for (const auto& entry : std::filesystem::directory_iterator(CORRAL_EXAMPLES_DIR)) {
    const std::string file = entry.path().string();
    // chain.json polls three jobs for about 40 s; tools/demo runs it.
    if (entry.path().extension() != ".json" || entry.path().filename() == "chain.json") continue;
    CliResult r =
        run_cli({"run", file, "-n", "5", "--var", "base=" + api.base()}, home.path(), {}, seconds(60));
    INFO(file << "\n" << r.describe());
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("  passed     : 5"));
    ++ran;
  }
  CHECK(ran >= 5);
}
