// The supervisor seen from outside: workers that die, crash, hang, never get ready or break the
// IPC contract are replaced (or given up on) and the reason is recorded in /workers.
#include <catch2/catch.hpp>
#include <csignal>
#include <thread>

#include "tests/support/harness.h"

namespace corral::test {
namespace {

// Timeouts short enough for a test, long enough for a loaded 2-core CI machine.
Json quick_config(Json overrides = Json::object()) {
  Json c = {{"heartbeat_timeout", "2s"}, {"kill_grace", "1s"}, {"stop_grace", "2s"}};
  c.update(overrides);
  return c;
}

DaemonOptions with_fault(const std::string& fault, Json config = quick_config()) {
  return DaemonOptions()
      .with_workers(2)
      .with_config(std::move(config))
      .with_env("CORRAL_TEST_FAULT", fault);
}

std::string last_reason(const Json& w) {
  if (!w.is_object() || !w.contains("last_exit") || !w["last_exit"].is_object()) return "";
  return w["last_exit"].value("reason", "");
}

// Waits until slot `slot` has exited at least once with `reason`; returns its entry then.
Json wait_exit_reason(Daemon& d, int slot, const std::string& reason, milliseconds timeout) {
  Json w;
  d.wait_until(
      [&] {
        w = d.worker(slot);
        return last_reason(w) == reason;
      },
      timeout, "slot " + std::to_string(slot) + " to record last_exit.reason \"" + reason + "\"");
  return w;
}

TEST_CASE(
    "supervisor: a worker killed with SIGKILL is replaced within 1 s and the reason is "
    "recorded") {
  TempHome home;
  // The default restart policy: the first backoff is ~100 ms.
  Daemon daemon(home, DaemonOptions().with_workers(2));
  Json before = daemon.wait_ready(2);
  const pid_t old_pid = before[0].at("pid");
  const int old_restarts = before[0].at("restarts");
  const pid_t other_pid = before[1].at("pid");

  const auto killed_at = Clock::now();
  REQUIRE(::kill(old_pid, SIGKILL) == 0);
  Json w;
  const auto replaced_at = daemon.wait_until(
      [&] {
        w = daemon.worker(0);
        return w.at("state") == "ready" && w.at("pid") != old_pid && w.at("pid") != 0;
      },
      seconds(5), "slot 0 to be ready with a new pid");
  const auto took = std::chrono::duration_cast<milliseconds>(replaced_at - killed_at);
  INFO("slot 0 replaced after " << took.count() << " ms: " << w.dump());
  // 1 s, plus one poll (20 ms) and the /workers round trip that observed it.
  CHECK(took <= milliseconds(1100));
  CHECK(process_alive(w.at("pid").get<pid_t>()));
  CHECK_FALSE(process_alive(old_pid));
  CHECK(w.at("restarts") == old_restarts + 1);
  REQUIRE(w.at("last_exit").is_object());
  CHECK(w["last_exit"].at("reason") == "signal");
  CHECK(w["last_exit"].at("signal") == SIGKILL);
  // The other worker was not touched.
  Json other = daemon.worker(1);
  CHECK(other.at("pid") == other_pid);
  CHECK(other.at("restarts") == 0);
}

TEST_CASE("supervisor: a killed worker is replaced by the spare started in advance, and a new "
          "spare follows") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(2).with_config(quick_config({{"stable_after", "1s"}})));
  d.wait_ready(2);
  pid_t spare = 0;
  d.wait_until(
      [&] {
        spare = d.health().value("spare_pid", 0);
        return spare > 0;
      },
      seconds(10), "a spare worker");
  REQUIRE(process_alive(spare));
  d.wait_until([&] { return d.worker(0)["uptime_s"].get<double>() >= 1.2; }, seconds(10),
               "slot 0 to be stable");
  const pid_t old = d.worker(0).at("pid");
  REQUIRE(::kill(old, SIGKILL) == 0);
  d.wait_until([&] { return d.worker(0)["pid"] == spare && d.worker(0)["state"] == "ready"; },
               seconds(10), "slot 0 to run the spare");
  CHECK(last_reason(d.worker(0)) == "signal");
  pid_t next = 0;
  d.wait_until(
      [&] {
        next = d.health().value("spare_pid", 0);
        return next > 0 && next != spare;
      },
      seconds(10), "a new spare");
  CHECK(process_alive(next));

  // Without spares, a slot starts a new process.
  TempHome other;
  Daemon plain(other, DaemonOptions().with_workers(1).with_config({{"spare_workers", 0}}));
  plain.wait_ready(1);
  hold_for([&] { return plain.health().value("spare_pid", -1) == 0; }, milliseconds(500),
           "no spare with spare_workers 0");
}

TEST_CASE("supervisor: a spare that exits on its own is started again after 2 s, then after 4 s") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  auto spare_other_than = [&](pid_t old) {
    pid_t pid = 0;
    d.wait_until(
        [&] {
          pid = d.health().value("spare_pid", 0);
          return pid > 0 && pid != old;
        },
        seconds(15), "a new spare");
    return pid;
  };
  pid_t spare = spare_other_than(0);
  const pid_t worker = d.worker(0).at("pid");
  for (const auto delay : {milliseconds(2000), milliseconds(4000)}) {
    REQUIRE(::kill(spare, SIGKILL) == 0);
    const auto killed = std::chrono::steady_clock::now();
    const pid_t next = spare_other_than(spare);
    const auto waited = std::chrono::steady_clock::now() - killed;
    INFO("spare " << spare << " killed, " << next << " started after "
                  << std::chrono::duration_cast<milliseconds>(waited).count() << " ms");
    CHECK(waited >= delay - milliseconds(100));
    CHECK_THAT(read_file(home.master_log()),
               Catch::Contains("spare worker pid " + std::to_string(spare) + " exited"));
    spare = next;
  }
  CHECK(d.worker(0)["pid"] == worker);  // the slot's worker never noticed
  CHECK(d.worker(0)["restarts"] == 0);
}

TEST_CASE(
    "supervisor: a worker that crashes at start backs off, then its slot is errored "
    "without a busy loop") {
  TempHome home;
  const int crash_loop_exits = 5;
  Daemon daemon(home,
                with_fault("crash_at_start@0", quick_config({{"backoff_initial", "20ms"},
                                                             {"backoff_factor", 1.5},
                                                             {"crash_loop_exits", crash_loop_exits},
                                                             {"errored_retry", "60s"}})));
  Json w;
  daemon.wait_until(
      [&] {
        w = daemon.worker(0);
        return w.is_object() && w.at("state") == "errored";
      },
      seconds(15), "slot 0 to be errored");
  INFO("slot 0: " << w.dump());
  const std::string reason = w.at("reason");
  CHECK_FALSE(reason.empty());
  CHECK_THAT(reason, Catch::Contains("crash loop", Catch::CaseSensitive::No));
  CHECK(last_reason(w) == "crash");
  const int starts = w.at("starts");
  CHECK(starts > 1);  // it was restarted (with backoff) before being given up on
  CHECK(starts <= crash_loop_exits);
  CHECK(w.at("pid") == 0);

  // Slot 1 is healthy the whole time, and slot 0 is not started again.
  Json one = daemon.worker(1);
  REQUIRE(one.at("state") == "ready");
  const pid_t one_pid = one.at("pid");
  hold_for(
      [&] {
        Json list = daemon.workers();
        return list.size() == 2 && list[0].at("state") == "errored" &&
               list[0].at("starts") == starts && list[1].at("state") == "ready" &&
               list[1].at("pid") == one_pid;
      },
      seconds(2), "slot 0 errored with " + std::to_string(starts) + " starts, slot 1 ready",
      [&] { return daemon.api("GET", "/workers").body; });
}

TEST_CASE("supervisor: a worker that cannot initialise is errored after exactly one start") {
  TempHome home;
  Daemon daemon(home, with_fault("init_fail@0"));
  Json w;
  daemon.wait_until(
      [&] {
        w = daemon.worker(0);
        return w.is_object() && w.at("state") == "errored";
      },
      seconds(10), "slot 0 to be errored");
  INFO("slot 0: " << w.dump());
  CHECK(w.at("starts") == 1);
  CHECK(last_reason(w) == "init_failed");
  CHECK(w["last_exit"].at("code") == 78);
  CHECK_FALSE(w.at("reason").get<std::string>().empty());
  daemon.wait_until([&] { return daemon.worker(1).at("state") == "ready"; }, seconds(10),
                    "slot 1 to be ready");
  hold_for([&] { return daemon.worker(0).at("starts") == 1; }, seconds(1),
           "slot 0 staying at one start");
}

TEST_CASE("supervisor: a worker that stops heartbeating is killed and replaced with reason hung") {
  TempHome home;
  Daemon daemon(
      home,
      with_fault("hang@0", quick_config({{"heartbeat_timeout", "2s"}, {"kill_grace", "1s"}})));
  Json first = daemon.wait_ready(2);
  const pid_t hung_pid = first[0].at("pid");
  const auto ready_at = Clock::now();
  Json w = wait_exit_reason(daemon, 0, "hung", seconds(15));
  const auto detected_after = std::chrono::duration_cast<milliseconds>(Clock::now() - ready_at);
  INFO("slot 0 after " << detected_after.count() << " ms: " << w.dump());
  const int sig = w["last_exit"].at("signal");
  CHECK(sig == SIGKILL);  // at once: a hung loop cannot act on a gentler signal
  // It hangs ~0.5 s after ready and must stay silent for heartbeat_timeout (2 s) before it
  // counts as hung; measured from a little after ready, so allow some slack.
  CHECK(detected_after >= milliseconds(1500));
  CHECK_FALSE(process_alive(hung_pid));
  // The replacement comes up (and will hang too: the fault applies to every start of slot 0).
  daemon.wait_until(
      [&] {
        w = daemon.worker(0);
        return w.at("pid") != hung_pid && w.at("pid") != 0 && w.at("starts") >= 2;
      },
      seconds(5), "slot 0 to run a new process");
  CHECK(daemon.worker(1).at("state") == "ready");
}

TEST_CASE("supervisor: a master stopped for longer than heartbeat_timeout keeps its workers") {
  // While the master is stopped its workers' heartbeats wait in their pipes; when it goes on,
  // the time it was stopped is its own, not theirs.
  TempHome home;
  Daemon daemon(home, DaemonOptions().with_workers(2).with_config(quick_config()));
  Json before = daemon.wait_ready(2);
  REQUIRE(::kill(daemon.pid(), SIGSTOP) == 0);
  std::this_thread::sleep_for(milliseconds(3500));  // heartbeat_timeout is 2 s
  REQUIRE(::kill(daemon.pid(), SIGCONT) == 0);
  hold_for(
      [&] {
        for (int slot : {0, 1}) {
          Json w = daemon.worker(slot);
          if (w.at("pid") != before[slot].at("pid") || w.at("restarts") != 0) return false;
        }
        return true;
      },
      seconds(3), "both workers kept after the master went on");
  CHECK_THAT(read_file(home.master_log()), Catch::Contains("the master's loop was held for"));
}

TEST_CASE("supervisor: a worker that never says ready is killed with reason not_ready") {
  TempHome home;
  Daemon daemon(home, with_fault("never_ready@0", quick_config({{"ready_timeout", "1s"}})));
  const pid_t pid = daemon.worker(0).at("pid");
  Json w = wait_exit_reason(daemon, 0, "not_ready", seconds(10));
  INFO("slot 0: " << w.dump());
  CHECK(w["last_exit"].at("signal") == SIGKILL);
  if (pid != 0) CHECK_FALSE(process_alive(pid));
  // A failed start is retried after a backoff.
  daemon.wait_until([&] { return daemon.worker(0).at("starts") >= 2; }, seconds(5),
                    "slot 0 to be started again");
  CHECK(daemon.worker(1).at("state") == "ready");
}

TEST_CASE(
    "supervisor: a worker that sends a garbage frame is replaced with reason "
    "protocol_error and the master keeps answering") {
  TempHome home;
  Daemon daemon(home, with_fault("garbage_frame@0"));
  Json w = wait_exit_reason(daemon, 0, "protocol_error", seconds(10));
  INFO("slot 0: " << w.dump());
  CHECK(w.at("starts") >= 1);
  CHECK(daemon.running());
  ApiResponse h = daemon.api("GET", "/health");
  CHECK(h.status == 200);
  CHECK(h.json.at("status") == "ok");
  CHECK(h.json.at("pid") == daemon.pid());
  // Slot 0 keeps being replaced (each new process misbehaves the same way); slot 1 is fine.
  daemon.wait_until([&] { return daemon.worker(0).at("starts") >= 2; }, seconds(10),
                    "slot 0 to be started again");
  CHECK(daemon.worker(1).at("state") == "ready");
  CHECK(daemon.api("GET", "/health").status == 200);
}

}  // namespace
}  // namespace corral::test

namespace corral::test {
namespace {

TEST_CASE(
    "supervisor: a worker whose frame has fields of the wrong type is replaced with reason "
    "protocol_error and the master keeps answering") {
  TempHome home;
  DaemonOptions options =
      DaemonOptions().with_workers(2).with_env("CORRAL_TEST_FAULT", "bad_payload@0");
  Daemon daemon(home, options);
  Json w = wait_exit_reason(daemon, 0, "protocol_error", seconds(10));
  INFO("slot 0: " << w.dump());
  // The detail names the field at fault (shared/ipc/control.h).
  CHECK(w.at("last_exit").at("detail") ==
        "heartbeat.seq: expected an unsigned 64-bit integer, got \"one\"");
  CHECK(daemon.running());
  CHECK(daemon.api("GET", "/health").status == 200);
  CHECK(daemon.worker(1).at("state") == "ready");
}

}  // namespace
}  // namespace corral::test
