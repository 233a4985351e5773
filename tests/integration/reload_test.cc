// `corral reload` of the real daemon: under load, every worker is replaced without an
// instance failing or a step repeating, and a reload whose new workers fail (a bad config, a
// broken binary) stops at the first slot, leaves the old workers serving and restarts a slot
// from the binary and config it had.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

constexpr int kInstances = 1500;
constexpr int kSteps = 2;

// One job per instance, done after 9 s, polled every 200 ms: every instance is mid-poll while
// the reloads below run.
Json reload_scenario() { return job_poll_scenario("through a reload", 9000, "200ms"); }

// The daemon's /latency, asked every 20 ms on another thread while the test runs the CLI.
class LatencyProbe {
 public:
  explicit LatencyProbe(std::string socket) : socket_(std::move(socket)), thread_([this] { run(); }) {}
  ~LatencyProbe() { stop(); }
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int answered() const { return answered_; }
  int missed() const { return missed_; }

 private:
  void run() {
    while (!done_) {
      auto r = try_unix_request(socket_, "GET", "/latency", "", milliseconds(1000));
      (r && r->status == 200 ? answered_ : missed_) += 1;
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
  std::string socket_;
  std::atomic<bool> done_{false};
  std::atomic<int> answered_{0};
  std::atomic<int> missed_{0};
  std::thread thread_;
};

std::map<int, pid_t> pids(Daemon& d) {
  std::map<int, pid_t> out;
  for (const Json& w : d.workers()) out[w.at("slot").get<int>()] = w.at("pid").get<pid_t>();
  return out;
}

std::string exe_of(pid_t pid) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
}

void copy_executable(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to + ".new", std::filesystem::copy_options::overwrite_existing);
  REQUIRE(::chmod((to + ".new").c_str(), 0755) == 0);
  std::filesystem::rename(to + ".new", to);  // a new file, as a package upgrade does
}

}  // namespace

TEST_CASE("reload: under load every worker is replaced and a failed reload rolls back, with no "
          "instance failing, no step repeated and the API answering throughout") {
  TempHome home;
  JobApi api;
  const Json config = {{"reload_grace", "1s"}, {"ready_timeout", "5s"}};
  Daemon d(home, DaemonOptions().with_workers(2).with_config(config));
  d.wait_ready(2);
  const std::string id = submit_run(d, reload_scenario(), kInstances, api);
  d.wait_until([&] { return run_of(d, id)["counts"].value("running", 0) == kInstances; },
               seconds(30), "every instance to run");

  const auto before = pids(d);
  LatencyProbe probe(home.socket_path());
  CliResult ok = run_cli({"reload"}, home.path());
  INFO("reload: " << ok.describe());
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("reload 1 done: workers 0, 1 replaced"));
  // Each instance moved at most once: from its old worker to a new one, never to an old worker
  // that was replaced in turn, and not again to even out the loads.
  Json moved = instances_of(d, id, kInstances);
  CHECK(count_resume_reason(moved, "worker_stopped") > 0);
  CHECK(count_resume_reason(moved, "rebalanced") == 0);
  int twice = 0;
  for (const Json& in : moved) twice += in["resume_reasons"].size() > 1 ? 1 : 0;
  CHECK(twice == 0);
  const auto replaced = pids(d);
  for (const auto& [slot, pid] : before) {
    CHECK(replaced.at(slot) != pid);
    CHECK_FALSE(process_alive(pid));
  }

  // A config whose workers cannot live: the first new worker leaves at once (memory_soft).
  Json bad = config;
  bad["max_memory"] = "2MB";
  home.write_config(bad);
  CliResult failed = run_cli({"reload"}, home.path());
  INFO("failed reload: " << failed.describe());
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Catch::Contains("reload 2 failed at slot 0"));
  CHECK_THAT(failed.err, Catch::Contains("memory_soft"));
  CHECK(pids(d) == replaced);  // the old workers stay
  Json status = d.api("GET", "/workers/reload").json["reload"];
  CHECK(status["state"] == "failed");
  CHECK(status["slot"] == 0);
  CHECK(status["replaced"].empty());
  probe.stop();
  CHECK(probe.missed() == 0);
  CHECK(probe.answered() > 10);

  // The rolled-back slot restarts from the config it had, not the bad one on disk.
  REQUIRE(::kill(replaced.at(0), SIGKILL) == 0);
  d.wait_until(
      [&] {
        Json w = d.worker(0);  // one snapshot: state and pid from the same answer
        return w["state"] == "ready" && w["pid"] != replaced.at(0);
      },
      seconds(10), "slot 0 to be replaced after its kill");
  hold_for([&] { return d.worker(0)["state"] == "ready"; }, milliseconds(1500),
           "slot 0 staying ready (the bad config would make it leave)");

  wait_run_finished(d, id, seconds(120));
  Json run = run_of(d, id);
  INFO(run.dump());
  CHECK(run["counts"]["passed"] == kInstances);
  CHECK(api.stats()["jobs"] == kInstances);  // no "start" step ran twice
  Json all = instances_of(d, id, kInstances);
  CHECK(count_history_problems(all, kSteps) == 0);
  // The reload moved running instances by checkpoint.
  CHECK(count_resume_reason(all, "worker_stopped") > 0);
}

TEST_CASE("reload: a broken binary on disk fails the reload at the first slot, and that slot "
          "keeps restarting from the binary it was started from") {
  TempHome home;
  const std::string exe = home.file("corral");
  copy_executable(corral_binary(), exe);
  Daemon d(home, DaemonOptions()
                     .with_workers(2)
                     .with_config({{"reload_grace", "300ms"}, {"ready_timeout", "3s"}})
                     .from_binary(exe));
  d.wait_ready(2);
  const auto before = pids(d);

  copy_executable("/bin/false", exe);  // the upgrade installed something that cannot run
  CliResult failed = run_cli({"reload"}, home.path());
  INFO("failed reload: " << failed.describe());
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, Catch::Contains("reload 1 failed at slot 0: its new worker exited"));
  CHECK(pids(d) == before);

  REQUIRE(::kill(before.at(0), SIGKILL) == 0);
  Json restarted;
  d.wait_until(
      [&] {
        restarted = d.worker(0);
        return restarted["state"] == "ready" && restarted["pid"] != before.at(0);
      },
      seconds(10), "slot 0 to restart from its own binary");
  INFO("slot 0 after its restart: " << restarted.dump());
  // The file it runs is the one the daemon started with, since replaced on disk.
  CHECK_THAT(exe_of(restarted["pid"].get<pid_t>()), Catch::EndsWith("(deleted)"));

  copy_executable(corral_binary(), exe);  // the fixed upgrade
  CliResult ok = run_cli({"reload"}, home.path());
  INFO("reload: " << ok.describe());
  CHECK(ok.exit_code == 0);
  for (const auto& [slot, pid] : pids(d)) {
    CHECK(exe_of(pid) == exe);
    CHECK(pid != before.at(slot));
  }
}

TEST_CASE("reload: a second reload while one runs is refused with 409") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"reload_grace", "3s"}}));
  d.wait_ready(1);
  auto first = d.api("POST", "/workers/reload");
  REQUIRE(first.status == 202);
  CHECK(first.json["reload"]["state"] == "running");
  auto second = d.api("POST", "/workers/reload");
  CHECK(second.status == 409);
  CHECK_THAT(second.json.value("error", ""), Catch::Contains("reload 1 is still running"));
  CliResult cli = run_cli({"reload"}, home.path());
  CHECK(cli.exit_code == 1);
  CHECK_THAT(cli.err, Catch::Contains("still running"));
  // While on probation, the new worker shows beside the old one.
  Json w = d.worker(0);
  INFO(w.dump());
  CHECK(w["successor"]["pid"].get<pid_t>() > 0);
}

TEST_CASE(
    "reload: the worker count corral scale set outlives a reload, until the config's "
    "workers changes") {
  TempHome home;
  Json config = {{"workers", 1}, {"reload_grace", "1s"}, {"ready_timeout", "5s"}};
  Daemon d(home, DaemonOptions().with_config(config));
  d.wait_ready(1);
  CliResult scaled = run_cli({"scale", "2"}, home.path());
  INFO("scale: " << scaled.describe());
  REQUIRE(scaled.exit_code == 0);
  auto ready = [&] {
    int n = 0;
    for (const Json& w : d.workers()) n += w["state"] == "ready" ? 1 : 0;
    return n;
  };

  CliResult reload = run_cli({"reload"}, home.path());
  INFO("reload: " << reload.describe());
  CHECK(reload.exit_code == 0);
  CHECK_THAT(reload.out, Catch::Contains("reload 1 done: workers 0, 1 replaced"));
  hold_for([&] { return ready() == 2 && d.workers().size() == 2; }, milliseconds(1500),
           "both workers staying after the reload");
  Json workers = d.api("GET", "/config").json["workers"];
  CHECK(workers == Json{{"wanted", 2}, {"from", "corral scale"}});
  CHECK_THAT(read_file(home.master_log()),
             Catch::Contains("reload 1: keeping the 2 workers set by corral scale (the config "
                             "says 1)"));

  // A config whose workers changed was edited on purpose: it wins.
  config["workers"] = 3;
  home.write_config(config);
  CliResult edited = run_cli({"reload"}, home.path());
  INFO("reload after the edit: " << edited.describe());
  CHECK(edited.exit_code == 0);
  d.wait_until([&] { return ready() == 3; }, seconds(20), "3 workers, as the config now says");
  CHECK(d.api("GET", "/config").json["workers"] == Json{{"wanted", 3}, {"from", "config"}});
}

TEST_CASE("reload: piped, corral reload prints each line as it happens, not all at the end") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"reload_grace", "2s"}}));
  d.wait_ready(1);
  const std::string command = corral_binary() + " reload --home " + home.path();
  FILE* out = ::popen(command.c_str(), "r");
  REQUIRE(out != nullptr);
  char line[1024];
  REQUIRE(std::fgets(line, sizeof line, out) != nullptr);
  const auto first = std::chrono::steady_clock::now();
  CHECK_THAT(line, Catch::Contains("reload 1: replacing worker"));
  std::string rest;
  while (std::fgets(line, sizeof line, out) != nullptr) rest += line;
  const auto end = std::chrono::steady_clock::now();
  CHECK(::pclose(out) == 0);
  CHECK_THAT(rest, Catch::Contains("reload 1 done"));
  // The first line came before the new worker's 2 s of probation, not with the last one.
  CHECK(end - first >= milliseconds(1500));
}
