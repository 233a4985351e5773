// The pm2-style CLI driving a real daemon: start, status, scale, logs, stop.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "tests/support/harness.h"

namespace corral::test {
namespace {

// The lines of `table` that show worker `pid` in state ready.
int rows_ready_with_pid(const std::string& table, pid_t pid) {
  int n = 0;
  for (const auto& line : lines_of(table)) {
    std::istringstream words(line);
    bool has_pid = false;
    bool ready = false;
    for (std::string word; words >> word;) {
      has_pid |= word == std::to_string(pid);
      ready |= word == "ready";
    }
    n += has_pid && ready ? 1 : 0;
  }
  return n;
}

TEST_CASE("cli: status without a running daemon exits 3 with a one-line error") {
  TempHome home;
  CliResult r = run_cli({"status", "--home", home.path()}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 3);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.back() == '\n');
}

TEST_CASE("cli: start, status, start again, scale, logs and stop drive one daemon") {
  TempHome home;
  const std::string& h = home.path();
  CliResult start = run_cli({"start", "--home", h, "--listen", "127.0.0.1:0", "--workers", "2"}, h);
  // Whatever happens next, the daemon `corral start` left behind is stopped at the end.
  std::unique_ptr<Daemon> daemon;
  if (!read_file(home.file("corral.pid")).empty()) daemon = Daemon::adopt(home);
  INFO("corral start: " << start.describe());
  REQUIRE(start.exit_code == 0);
  REQUIRE(daemon != nullptr);
  // It returned once the API answers: the socket works right away.
  CHECK(daemon->health().at("pid") == daemon->pid());

  Json list = daemon->wait_ready(2);
  CliResult status = run_cli({"status", "--home", h}, h);
  INFO("corral status: " << status.describe());
  CHECK(status.exit_code == 0);
  for (const auto& w : list) CHECK(rows_ready_with_pid(status.out, w.at("pid")) == 1);
  // Named for ps and top, though started through /proc/self/fd/N.
  for (const auto& w : list) {
    CHECK(read_file("/proc/" + std::to_string(w.at("pid").get<int>()) + "/comm") ==
          "corral-worker\n");
  }

  CliResult again = run_cli({"start", "--home", h, "--listen", "127.0.0.1:0", "--workers", "2"}, h);
  INFO("corral start (again): " << again.describe());
  CHECK(again.exit_code != 0);
  CHECK_THAT(again.err, Catch::Contains("already running"));
  CHECK(daemon->running());

  CliResult scale = run_cli({"scale", "1", "--home", h}, h);
  INFO("corral scale 1: " << scale.describe());
  CHECK(scale.exit_code == 0);
  Json one = daemon->wait_ready(1);
  CHECK(one.size() == 1);

  CliResult logs = run_cli({"logs", "master", "--lines", "5", "--home", h}, h);
  INFO("corral logs: " << logs.describe());
  CHECK(logs.exit_code == 0);
  const std::string master_log = read_file(home.master_log());
  int from_log = 0;
  for (const auto& line : lines_of(logs.out)) {
    if (!line.empty() && master_log.find(line + "\n") != std::string::npos) ++from_log;
  }
  CHECK(from_log >= 1);
  CHECK(from_log <= 5);

  // Following, the tail's lines carry the same "master | " prefix as the lines that follow.
  CliResult followed = run_program(
      "/usr/bin/timeout",
      {"2", corral_binary(), "logs", "master", "--lines", "3", "--follow", "--home", h}, h);
  INFO("corral logs --follow: " << followed.describe());
  const std::vector<std::string> seen = lines_of(followed.out);
  REQUIRE(seen.size() >= 4);
  CHECK_THAT(seen[0], Catch::EndsWith("master.log last 3 lines:"));
  for (size_t k = 1; k < 4; ++k) CHECK_THAT(seen[k], Catch::StartsWith("master | "));

  CliResult stop = run_cli({"stop", "--home", h}, h);
  INFO("corral stop: " << stop.describe());
  CHECK(stop.exit_code == 0);
  CHECK_FALSE(process_alive(daemon->pid()));
  for (pid_t p : daemon->seen_worker_pids()) CHECK_FALSE(process_alive(p));
}

}  // namespace
}  // namespace corral::test
