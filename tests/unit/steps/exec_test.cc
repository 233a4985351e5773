// The exec step on the engine: real commands (sh), their exit codes and output, the process
// group killed at the deadline, on cancel and on a hand-back, and the per-worker cap.
#include <sys/stat.h>
#include <uv.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/unit/worker/engine_fixture.h"

namespace corral::test::engine {
namespace {

json exec_scenario(const json& steps) { return {{"name", "exec"}, {"steps", steps}}; }

json sh(const std::string& script, const json& more = json::object()) {
  json step = {{"exec", {{"argv", {"sh", "-c", script}}}}};
  step.update(more);
  return step;
}

// A scratch directory of this test process, removed at the end.
struct TempDir {
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("corral-exec-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::filesystem::path path;
  static inline int counter = 0;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

// Whether process `pid` still exists (a zombie does not count: it no longer runs).
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] != 'Z';
}

// Starts one instance whose command writes its pid and sleeps; returns the pid once written.
pid_t start_sleeper(Fixture& f, const TempDir& dir) {
  std::string pids = dir.file("pids");
  f.start(exec_scenario(json::array({sh("echo $$ > " + pids + "; sleep 30")})));
  REQUIRE(f.run_until([&] { return !read_file(pids).empty(); }));
  return std::atoi(read_file(pids).c_str());
}

TEST_CASE("exec step: exit 0 passes, and captures from its JSON stdout feed the next step") {
  Fixture f;
  f.start(
      exec_scenario(json::array(
          {sh(R"(echo "{\"id\": \"job-$CORRAL_INSTANCE\", \"run\": \"$CORRAL_RUN\"}")",
              {{"capture", {{"id", {{"json", "/id"}}}, {"run_seen", {{"json", "/run"}}}}}}),
           {{"exec", {{"argv", {"sh", "-c", "echo \"got $JOB\""}}, {"env", {{"JOB", "{{id}}"}}}}},
            {"expect", json::array({{{"exit_code", 0}}, {{"body_contains", "got job-1"}}})},
            {"capture", {{"said", {{"body", true}}}}}}})),
      2);
  REQUIRE(f.run_until([&] { return f.done_count() == 2; }));
  auto done = f.of("done", 1);
  REQUIRE(done.size() == 1);
  CHECK(done[0]["state"] == "passed");
  auto steps = f.of("step", 1);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0]["vars"]["id"] == "job-1");
  CHECK(steps[0]["vars"]["run_seen"] == "r1");
  CHECK(steps[1]["vars"]["said"] == "got job-1\n");
}

TEST_CASE("exec step: a non-zero exit fails the step with the code and the end of stderr") {
  Fixture f;
  f.start(exec_scenario(json::array({sh("echo 'make: no rule' >&2; exit 2")})));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done");
  CHECK(done[0]["state"] == "failed");
  CHECK(done[0]["reason"] == "exit code 2; stderr: make: no rule");
}

TEST_CASE("exec step: with expect the conditions decide, exit code included") {
  Fixture f;
  f.start(exec_scenario(
      json::array({sh("echo partial; exit 3", {{"expect", {{"exit_code", json::array({0, 3})}}}}),
                   sh("exit 1", {{"expect", {{"exit_code", 0}}}})})));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done");
  CHECK(done[0]["state"] == "failed");
  CHECK(done[0]["reason"] == "expect: exit code was 1, expected 0 (exit code 1)");
  CHECK(f.of("step").size() == 2);  // the first passed on exit code 3
}

TEST_CASE("exec step: a program that does not exist errors the instance, naming it") {
  Fixture f;
  f.start(exec_scenario(json::array({{{"exec", {{"argv", {"/nonexistent/corral-prog"}}}}}})));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done");
  CHECK(done[0]["state"] == "errored");
  CHECK(done[0]["reason"] ==
        "exec: cannot start /nonexistent/corral-prog: no such file or directory");
}

TEST_CASE("exec step: at its timeout the command and what it started are killed") {
  Fixture f;
  TempDir dir;
  std::string pids = dir.file("pids");
  f.start(exec_scenario(
      json::array({{{"exec",
                     {{"argv", {"sh", "-c", "sleep 30 & echo $! > " + pids + "; sleep 30"}},
                      {"timeout", "300ms"}}}}})));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done");
  CHECK(done[0]["state"] == "failed");
  CHECK(done[0]["reason"] == "step timed out after 300ms: the command was killed");
  pid_t background = std::atoi(read_file(pids).c_str());
  REQUIRE(background > 0);
  CHECK(f.run_until([&] { return !alive(background); }, 5000));
}

TEST_CASE("exec step: cancelling the run kills the command's process group") {
  Fixture f;
  TempDir dir;
  pid_t pid = start_sleeper(f, dir);
  REQUIRE(alive(pid));
  f.engine->cancel_run("r1");
  CHECK(f.run_until([&] { return !alive(pid); }, 5000));
  CHECK(f.done_count() == 0);
}

TEST_CASE("exec step: a running command is never moved, but a hand-back kills it and resumes") {
  Fixture f;
  TempDir dir;
  pid_t pid = start_sleeper(f, dir);
  size_t taken = 0;
  CHECK(f.engine->take_waiting(10, taken).empty());
  CHECK(taken == 0);
  json back = f.engine->take_all();
  REQUIRE(back.contains("r1"));
  auto cp = ipc::checkpoint_from_json(back["r1"]["0"]);
  REQUIRE(cp);
  CHECK(cp->step == 0);
  CHECK(cp->step_started_ms != 0);  // resumed, it runs the command again, same deadline
  CHECK(f.run_until([&] { return !alive(pid); }, 5000));
}

TEST_CASE("exec step: a worker runs at most twice its CPUs of commands, the others wait") {
  Fixture f;
  TempDir dir;
  const size_t cap = 2 * std::max<size_t>(1, uv_available_parallelism());
  const uint32_t n = static_cast<uint32_t>(cap + 3);
  // Each command marks itself running, reports how many are, and unmarks itself.
  std::string script =
      "d=" + dir.path.string() +
      "; touch $d/$CORRAL_INSTANCE; sleep 0.3; ls $d | wc -l; rm $d/$CORRAL_INSTANCE";
  f.start(exec_scenario(json::array({sh(script, {{"capture", {{"seen", {{"body", true}}}}}})})), n);
  REQUIRE(f.run_until([&] { return f.done_count() == n; }, 20000));
  int most = 0;
  for (uint32_t i = 0; i < n; ++i) {
    auto steps = f.of("step", i);
    REQUIRE(steps.size() == 1);
    CHECK(steps[0]["state"] == "passed");
    most = std::max(most, std::atoi(steps[0]["vars"]["seen"].get<std::string>().c_str()));
  }
  CHECK(most >= 2);
  CHECK(most <= static_cast<int>(cap));
}

TEST_CASE("exec step: the command never sees the worker's secrets in its environment") {
  Fixture f;
  ::setenv("CORRAL_SECRET_EXEC_TEST", "s3cret", 1);
  f.start(exec_scenario(json::array({sh("echo \"[${CORRAL_SECRET_EXEC_TEST:-none}]\"",
                                        {{"expect", {{"body_contains", "[none]"}}}})})));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  ::unsetenv("CORRAL_SECRET_EXEC_TEST");
  CHECK(f.of("done")[0]["state"] == "passed");
}

TEST_CASE("exec step: stdout past max_output is cut, and the step still ends") {
  Fixture f;
  f.start(exec_scenario(json::array(
      {{{"exec",
         {{"argv", {"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x"}}, {"max_output", 1000}}},
        {"capture", {{"out", {{"body", true}}}}}}})));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto steps = f.of("step");
  REQUIRE(steps.size() == 1);
  CHECK(steps[0]["vars"]["out"].get<std::string>() == std::string(1000, 'x'));
}

}  // namespace
}  // namespace corral::test::engine
