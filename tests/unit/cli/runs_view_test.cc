// What `corral run`, `corral show RUN` and `corral show RUN/N` print, from fixed API answers read
// through their models (shared/api/runs.h).
#include <string>

#include <catch2/catch.hpp>

#include "cli/runs_view.h"

namespace corral::cli {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// A finished run of 10 instances, as GET /runs/<id> returns it.
json finished_run() {
  return json::parse(R"json({
    "id": "r3-00af", "scenario": "job-a", "state": "finished", "instances": 10,
    "created_at": "2026-11-30T15:00:00Z", "finished_at": "2026-11-30T15:00:42Z",
    "counts": {"queued": 0, "running": 0, "passed": 7, "failed": 2, "errored": 1,
               "cancelled": 0},
    "duration_ms": {"p50": 1500, "p95": 12000, "max": 41250},
    "failures": [
      {"step": 1, "step_name": "wait for A", "reason": "until not met after 3 attempts",
       "count": 2},
      {"step": 0, "step_name": "start A", "reason": "connect: connection refused", "count": 1}]
  })json");
}

// Instance 4 of that run, as GET /runs/<id>/instances/4 returns it: step 0 passed after a retry,
// step 1 failed its poll.
json failed_instance() {
  return json::parse(R"json({
    "i": 4, "state": "failed", "step": 1, "reason": "until not met after 3 attempts",
    "resumes": 1, "resume_reasons": ["worker 0 exited (signal SIGKILL)"],
    "started_at": "2026-11-30T15:00:00Z", "ended_at": "2026-11-30T15:00:02Z",
    "duration_ms": 2350,
    "steps": [
      {"step": 0, "name": "start A", "state": "passed", "attempts": 2, "duration_ms": 12,
       "status": 201},
      {"step": 1, "name": "wait for A", "state": "failed", "attempts": 3, "duration_ms": 2300,
       "status": 200, "reason": "until not met after 3 attempts"}]
  })json");
}

// GET /runs/<id>'s answer `j`, read as the CLI reads it.
api::RunDetail shown_run(const json& j) {
  auto run = api::run_detail_from_json(j);
  INFO((run ? "" : run.status().message()));
  REQUIRE(run.is_ok());
  return *run;
}

// GET /runs/<id>/instances/<n>'s answer `j`, read as the CLI reads it.
api::InstanceEntry shown_instance(const json& j) {
  auto in = api::instance_from_json(j);
  INFO((in ? "" : in.status().message()));
  REQUIRE(in.is_ok());
  return *in;
}

// The line of `text` that starts with `prefix`.
std::string line_of(const std::string& text, const std::string& prefix) {
  const size_t at = text.rfind(prefix, 0) == 0 ? 0 : text.find("\n" + prefix);
  REQUIRE(at != std::string::npos);
  const size_t from = at == 0 ? 0 : at + 1;
  return text.substr(from, text.find('\n', from) - from);
}

TEST_CASE("cli run progress: names the run, its state, the elapsed time and the non-zero counts") {
  json run = finished_run();
  run["state"] = "running";
  run["counts"] = {{"queued", 0}, {"running", 5}, {"passed", 4},
                   {"failed", 1}, {"errored", 0}, {"cancelled", 0}};
  CHECK(render_progress(shown_run(run), 12.7) ==
        "r3-00af  running  12s  10 instances: 4 passed, 1 failed, 5 running");
  CHECK(render_progress(shown_run(finished_run()), 125) ==
        "r3-00af  finished  2m05s  10 instances: 7 passed, 2 failed, 1 errored");
}

TEST_CASE("cli run progress: elapsed time reads to the second at every scale") {
  struct Case {
    double seconds;
    const char* text;
  };
  for (const Case& c : {Case{-3, "0s"}, Case{0, "0s"}, Case{0.99, "0s"}, Case{59.9, "59s"},
                        Case{60, "1m00s"}, Case{3599, "59m59s"}, Case{3600, "1h00m00s"},
                        Case{3723, "1h02m03s"}, Case{90000, "25h00m00s"}}) {
    INFO(c.seconds);
    CHECK(elapsed_text(c.seconds) == c.text);
  }
}

TEST_CASE("cli run progress: off a TTY, a line when counts change, at most one a second") {
  ProgressGate gate(1000ms);
  const ProgressGate::Clock::time_point t0{};
  json run = finished_run();
  run["state"] = "running";
  CHECK(gate.due(shown_run(run), t0, false));             // the first line
  CHECK_FALSE(gate.due(shown_run(run), t0 + 2s, false));  // nothing changed: no line
  run["counts"]["passed"] = 8;
  CHECK(gate.due(shown_run(run), t0 + 2500ms, false));  // changed, a second after the last line
  run["counts"]["passed"] = 9;
  CHECK_FALSE(gate.due(shown_run(run), t0 + 3s, false));  // changed, but only 0.5 s later
  CHECK(gate.due(shown_run(run), t0 + 3600ms, false));    // still changed once the second is up
  run["state"] = "finished";
  CHECK(gate.due(shown_run(run), t0 + 3700ms, true));    // the final line does not wait
  CHECK_FALSE(gate.due(shown_run(run), t0 + 9s, true));  // and is not printed twice
}

TEST_CASE("cli show run: counts per state, durations and failures grouped by step and reason") {
  const std::string text = render_run(shown_run(finished_run()));
  CHECK(line_of(text, "run ") == "run        : r3-00af");
  CHECK(line_of(text, "scenario") == "scenario   : job-a");
  CHECK(line_of(text, "finished ") == "finished   : 2026-11-30T15:00:42Z");
  CHECK(line_of(text, "  passed") == "  passed     : 7");
  CHECK(line_of(text, "  failed") == "  failed     : 2");
  CHECK(line_of(text, "  errored") == "  errored    : 1");
  CHECK(line_of(text, "  cancelled") == "  cancelled  : 0");
  CHECK(line_of(text, "duration") == "duration   : p50 1.5s, p95 12.0s, max 41.2s");
  CHECK(line_of(text, "  2 x") == "  2 x step 1 (wait for A): until not met after 3 attempts");
  CHECK(line_of(text, "  1 x") == "  1 x step 0 (start A): connect: connection refused");
  CHECK(text.find("  2 x") < text.find("  1 x"));  // most common first, as the API sorts them
}

TEST_CASE("cli show run: a run without failures has no failures section and dashes for times") {
  json run = finished_run();
  run["failures"] = json::array();
  run["finished_at"] = nullptr;
  const std::string text = render_run(shown_run(run));
  CHECK(text.find("failures") == std::string::npos);
  CHECK(line_of(text, "finished ") == "finished   : -");
}

TEST_CASE("cli show run: with no instance finished, durations are a dash, not zeros") {
  json run = finished_run();
  run["state"] = "running";
  run["counts"] = {{"queued", 4}, {"running", 6}, {"passed", 0},
                   {"failed", 0}, {"errored", 0}, {"cancelled", 0}};
  run["duration_ms"] = {{"p50", 0}, {"p95", 0}, {"max", 0}};
  CHECK(line_of(render_run(shown_run(run)), "duration") ==
        "duration   : - (no instance has finished)");
}

TEST_CASE("cli run progress: one instance is an instance") {
  json run = finished_run();
  run["instances"] = 1;
  run["counts"] = {{"passed", 1}};
  CHECK(render_progress(shown_run(run), 1.0).find("  1 instance: 1 passed") != std::string::npos);
}

TEST_CASE("cli show instance: a call its callback step has not used yet is shown") {
  json in = failed_instance();
  CHECK(render_instance(shown_instance(in), TableStyle::kAscii).find("callback") ==
        std::string::npos);
  in["callback"] = {{"step", 2}, {"called", true}};
  CHECK(line_of(render_instance(shown_instance(in), TableStyle::kAscii), "callback") ==
        "callback of step 2: called, not used yet");
}

TEST_CASE("cli show instance: the response a failed step kept follows the table, indented") {
  json in = failed_instance();
  CHECK(render_instance(shown_instance(in), TableStyle::kAscii).find("response") ==
        std::string::npos);
  in["steps"][1]["body"] = "{\"state\": \"failed\",\r\n \"error\": \"quota\"}\xE2\x80\xA6";
  const std::string text = render_instance(shown_instance(in), TableStyle::kAscii);
  const std::string expected =
      "response of step 1 (wait for A):\n"
      "  {\"state\": \"failed\",\n"
      "   \"error\": \"quota\"}\xE2\x80\xA6\n";
  REQUIRE(text.size() >= expected.size());
  CHECK(text.substr(text.size() - expected.size()) == expected);
}

TEST_CASE(
    "cli show instance: where each branch of a parallel step is, and branch steps by branch") {
  json in = failed_instance();
  in["step"] = 1;
  in["branches"] = json::parse(R"([{"name": "eu", "state": "passed"},
      {"name": "us", "state": "running", "step": 6, "step_name": "wait"},
      {"name": "ap", "state": "waiting"}])");
  in["steps"].push_back({{"step", 5},
                         {"name", "start"},
                         {"branch", "us"},
                         {"state", "passed"},
                         {"attempts", 1},
                         {"duration_ms", 3},
                         {"status", 201}});
  const std::string text = render_instance(shown_instance(in), TableStyle::kAscii);
  CHECK(line_of(text, "branches") ==
        "branches of step 1: eu passed; us running (step 6 wait); ap waiting");
  CHECK(text.find("| us: start ") != std::string::npos);
}

TEST_CASE("cli show instance: the header says the state, reason and resumes, and a row per step") {
  const std::string text = render_instance(shown_instance(failed_instance()), TableStyle::kAscii);
  CHECK(line_of(text, "instance") ==
        "instance 4: failed (until not met after 3 attempts), 1 resumes "
        "[\"worker 0 exited (signal SIGKILL)\"]");
  CHECK(line_of(text, "| 0 ") ==
        "| 0    | start A    | passed | 2        | 12ms | -          | 201    | -      "
        "                        |");
  CHECK(line_of(text, "| 1 ") ==
        "| 1    | wait for A | failed | 3        | 2.3s | -          | 200    | "
        "until not met after 3 attempts |");
}

TEST_CASE("cli show instance: the trace its requests carry, when they carry one") {
  json in = failed_instance();
  CHECK(render_instance(shown_instance(in), TableStyle::kAscii).find("trace") == std::string::npos);
  in["trace_id"] = "4bf92f3577b34da6a3ce929d0e0e4736";
  CHECK(line_of(render_instance(shown_instance(in), TableStyle::kAscii), "trace") ==
        "trace: 4bf92f3577b34da6a3ce929d0e0e4736 (each request's traceparent)");
}

}  // namespace
}  // namespace corral::cli
