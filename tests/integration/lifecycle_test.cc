// The daemon's own life: how it ends (SIGKILL, SIGTERM), that one home has one daemon, and
// SIGHUP reloading the config file.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>

#include "tests/support/harness.h"

namespace corral::test {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string pids_text(const std::set<pid_t>& pids) {
  std::string s;
  for (pid_t p : pids) s += std::to_string(p) + (process_alive(p) ? "(alive) " : "(gone) ");
  return s;
}

TEST_CASE("lifecycle: SIGKILL of the master leaves no worker behind within 2 s") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(2));
  daemon.wait_ready(2);
  const std::set<pid_t> pids = daemon.seen_worker_pids();
  REQUIRE(pids.size() == 2);
  daemon.signal(SIGKILL);
  wait_for(
      [&] {
        for (pid_t p : pids) {
          if (process_alive(p)) return false;
        }
        return true;
      },
      seconds(2), "every worker of the killed master to be gone", [&] { return pids_text(pids); });
  CHECK(daemon.wait_exit(seconds(2)) == 128 + SIGKILL);
}

TEST_CASE("lifecycle: SIGTERM stops the workers, removes the socket and pid file and exits 0") {
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(2).with_config(Json{{"stop_grace", "5s"}}));
  Json list = daemon.wait_ready(2);
  const std::set<pid_t> pids = daemon.seen_worker_pids();
  REQUIRE(pids.size() == 2);
  REQUIRE(exists(home.socket_path()));
  REQUIRE(exists(home.file("corral.pid")));

  daemon.signal(SIGTERM);
  // Within the stop grace (5 s), plus margin for a loaded machine.
  CHECK(daemon.wait_exit(seconds(8)) == 0);
  for (pid_t p : pids) {
    INFO("worker pid " << p);
    CHECK_FALSE(process_alive(p));
  }
  CHECK_FALSE(exists(home.socket_path()));
  CHECK_FALSE(exists(home.file("corral.pid")));
  const std::string log = read_file(home.master_log());
  INFO("master.log:\n" << log);
  for (pid_t p : pids) {
    // Each worker was asked to stop and did so (not killed at the end of the grace).
    CHECK_THAT(log, Catch::Contains("worker pid " + std::to_string(p) + " exited: stopped"));
  }
  CHECK_THAT(log, Catch::Contains("all workers stopped"));
}

TEST_CASE("lifecycle: a second daemon on the same home refuses to start and names the first") {
  TempHome home;
  Daemon first(home, DaemonOptions().with_workers(1));
  first.wait_ready(1);
  const pid_t worker_pid = first.worker(0).at("pid");

  CliResult second =
      run_cli({"daemon", "--home", home.path(), "--listen", "127.0.0.1:0", "--workers", "1"},
              home.path(), {}, seconds(15));
  INFO(second.describe());
  CHECK(second.exit_code != 0);
  CHECK_THAT(second.err, Catch::Contains("pid " + std::to_string(first.pid())));

  // The first daemon is unharmed: same process, same socket, same worker.
  CHECK(first.running());
  Json health = first.health();
  CHECK(health.at("pid") == first.pid());
  CHECK(health.at("workers_ready") == 1);
  CHECK(first.worker(0).at("pid") == worker_pid);
  CHECK(exists(home.file("corral.pid")));
  CHECK(std::stol(read_file(home.file("corral.pid"))) == first.pid());
}

TEST_CASE("lifecycle: SIGHUP reloads: the workers are replaced from the config file, and the "
          "daemon scales to its worker count") {
  TempHome home;
  const Json before = {{"workers", 1}, {"stop_grace", "2s"}, {"reload_grace", "200ms"}};
  Daemon daemon(home, DaemonOptions().with_config(before));
  daemon.wait_ready(1);
  const pid_t first_worker = daemon.worker(0).at("pid");
  Json after = before;
  after["workers"] = 3;
  home.write_config(after);
  daemon.signal(SIGHUP);
  daemon.wait_until(
      [&] { return daemon.api("GET", "/workers/reload").json["reload"]["state"] == "done"; },
      seconds(15), "the reload to end");
  Json list = daemon.wait_ready(3);
  CHECK(list[0].at("pid") != first_worker);
  CHECK_FALSE(process_alive(first_worker));
  CHECK(daemon.health().at("workers_wanted") == 3);
}

}  // namespace
}  // namespace corral::test
