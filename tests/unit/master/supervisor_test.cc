#include <catch2/catch.hpp>

#include <csignal>

#include "tests/unit/master/supervisor_bench.h"

using corral::master::Action;
using corral::master::ExitReason;
using corral::master::SlotState;
using corral::master::SupervisorSettings;
using corral::test::SupervisorBench;
using corral::test::count;


TEST_CASE("supervisor: the first reconcile spawns one worker per wanted slot") {
  SupervisorBench b(3);
  auto actions = b.step();
  CHECK(count(actions, Action::Kind::kSpawn) == 3);
  CHECK(b.sup.slots().size() == 3);
  CHECK(b.state(2) == SlotState::kStarting);
  CHECK(b.sup.ready_count() == 0);
  b.ready_all();
  CHECK(b.sup.ready_count() == 3);
  CHECK(b.step(10).empty());
}

TEST_CASE("supervisor: a worker silent past the heartbeat timeout gets SIGKILL at once") {
  SupervisorBench b(1);
  b.step();
  b.ready_all();
  b.sup.on_heartbeat(0, b.now, 1 << 20, 0.1, 0);
  CHECK(b.step(5000).empty());  // exactly at the timeout: still fine
  auto kill = b.step(1);
  CHECK(count(kill, Action::Kind::kSignal, SIGKILL) == 1);
  CHECK(count(kill, Action::Kind::kSignal) == 1);
  CHECK(b.state(0) == SlotState::kStopping);
  CHECK(b.step(5000).empty());  // SIGKILL is sent once
  CHECK(b.sup.slot(0)->kill_reason == ExitReason::kHung);
  b.exit(0, 0, SIGKILL);
  b.step();
  CHECK(b.last_reason(0) == ExitReason::kHung);
  CHECK(b.state(0) == SlotState::kBackoff);
  CHECK(count(b.step(100), Action::Kind::kSpawn) == 1);
  CHECK(b.sup.slot(0)->restarts == 1);
}

TEST_CASE("supervisor: any frame from a worker shows it is alive, not only its heartbeat") {
  // Its heartbeat can wait behind frames the master has not read yet.
  SupervisorBench b(1);
  b.step();
  b.ready_all();
  b.sup.on_heartbeat(0, b.now, 1 << 20, 0.1, 0);
  CHECK(b.step(4000).empty());
  b.sup.on_heard(0, b.now);
  CHECK(b.step(4000).empty());  // 8 s after its heartbeat, 4 s after its last frame
  CHECK(b.sup.slot(0)->kill_reason == std::nullopt);
  b.sup.on_heard(0, b.now, true);  // a frame from a successor it does not have: no effect
  CHECK(count(b.step(1001), Action::Kind::kSignal, SIGKILL) == 1);
  CHECK(b.sup.slot(0)->kill_reason == ExitReason::kHung);
}

TEST_CASE("supervisor: time the master's own loop was held is not counted against a worker") {
  SupervisorBench b(2);
  b.step();
  b.ready_all();
  b.sup.on_heard(0, b.now);
  b.sup.on_heard(1, b.now);
  // The master was stopped for 20 s: its workers' frames waited in their pipes.
  b.now += 20000;
  b.sup.on_master_held(20000, b.now);
  CHECK(b.step(0).empty());
  CHECK(b.step(4000).empty());
  // The time after it counts as before.
  CHECK(count(b.step(1001), Action::Kind::kSignal, SIGKILL) == 2);
}

TEST_CASE("supervisor: a worker heard while the master's loop was held is not killed for it") {
  // The hold is measured between two turns; frames handled inside it were heard at times within
  // it. Shifted by the whole hold, such a time lay in the future, the silence came out negative
  // and, unsigned, endless: a 300,000-socket test saw its workers killed as hung in bursts.
  SupervisorBench b(2);
  b.step();
  b.ready_all();
  b.sup.on_heard(0, b.now);
  b.now += 700;
  b.sup.on_heard(1, b.now);  // heard 300 ms before the hold ended
  b.now += 300;
  b.sup.on_master_held(1000, b.now);
  CHECK(b.step(0).empty());
  CHECK(b.sup.slot(0)->kill_reason == std::nullopt);
  CHECK(b.sup.slot(1)->kill_reason == std::nullopt);
  CHECK(b.step(5000).empty());  // both heard "now" at the latest: 5 s of silence is not past it
  CHECK(count(b.step(1), Action::Kind::kSignal, SIGKILL) == 2);
}

TEST_CASE("supervisor: a silent worker whose process makes system calls is starved, not hung") {
  // More busy processes than cores (a held test of 500,000 sockets: 56 workers and 64 target
  // processes on 2 cores): a worker's loop runs, but its heartbeat can take more than 5 s.
  SupervisorBench b(2);
  b.step();
  b.ready_all();
  b.sup.on_heard(0, b.now);
  b.sup.on_heard(1, b.now);
  for (int i = 0; i < 10; ++i) {  // 20 s of silence, slot 0's process busy throughout
    b.now += 2000;
    b.sup.on_progress(0, b.now);
    CHECK(count(b.step(0), Action::Kind::kSignal, SIGKILL) == (i == 2 ? 1 : 0));  // slot 1 at 6 s
  }
  CHECK(b.sup.slot(0)->kill_reason == std::nullopt);
  CHECK(b.sup.slot(1)->kill_reason == ExitReason::kHung);
  // Its calls stop: hung heartbeat_timeout after the last.
  CHECK(b.step(5000).empty());
  CHECK(count(b.step(1), Action::Kind::kSignal, SIGKILL) == 1);
  CHECK(b.sup.slot(0)->kill_reason == ExitReason::kHung);
}

TEST_CASE("supervisor: a worker is watched once silent for two heartbeats, until it is heard") {
  SupervisorBench b(1);
  b.step();
  CHECK_FALSE(b.sup.watched(0, b.now + 60000));  // starting: not judged by its silence
  b.ready_all();
  b.sup.on_heard(0, b.now);
  CHECK_FALSE(b.sup.watched(0, b.now + 1999));
  CHECK(b.sup.watched(0, b.now + 2000));
  b.now += 3000;
  b.sup.on_heard(0, b.now);
  CHECK_FALSE(b.sup.watched(0, b.now));
  CHECK_FALSE(b.sup.watched(7, b.now));  // no such slot
}

TEST_CASE("supervisor: a worker silent past starved_timeout is hung, busy or not") {
  SupervisorBench b(1);
  b.step();
  b.ready_all();
  b.sup.on_heard(0, b.now);
  for (int i = 0; i < 59; ++i) {
    b.now += 1000;
    b.sup.on_progress(0, b.now);
    CHECK(b.step(0).empty());
  }
  b.now += 1000;
  b.sup.on_progress(0, b.now);
  CHECK(b.step(0).empty());  // 60 s: not past it
  b.sup.on_progress(0, b.now + 1);
  CHECK(count(b.step(1), Action::Kind::kSignal, SIGKILL) == 1);
  CHECK(b.sup.slot(0)->kill_reason == ExitReason::kHung);
}

TEST_CASE("supervisor: a worker not ready within the ready timeout is killed as not_ready") {
  SupervisorBench b(1);
  b.step();
  CHECK(b.step(10000).empty());
  CHECK(count(b.step(1), Action::Kind::kSignal, SIGKILL) == 1);
  b.exit(0, 0, SIGKILL);
  b.step();
  CHECK(b.last_reason(0) == ExitReason::kNotReady);
}

TEST_CASE("supervisor: RSS past the hard limit kills the worker as memory_hard") {
  auto s = SupervisorBench::settings();
  s.memory_hard_bytes = 100;
  SupervisorBench b(1, s);
  b.step();
  b.ready_all();
  b.sup.on_rss_sample(0, 100);
  CHECK(b.step(1).empty());
  b.sup.on_rss_sample(0, 101);
  CHECK(count(b.step(1), Action::Kind::kSignal, SIGKILL) == 1);
  b.exit(0, 0, SIGKILL);
  b.step();
  CHECK(b.last_reason(0) == ExitReason::kMemoryHard);
}

TEST_CASE("supervisor: a protocol error kills the worker and records why") {
  SupervisorBench b(1);
  b.step();
  b.ready_all();
  b.sup.on_protocol_error(0, "frame length 0 outside 1..8388608");
  CHECK(count(b.step(), Action::Kind::kSignal, SIGKILL) == 1);
  b.exit(0, 0, SIGKILL);
  b.step();
  CHECK(b.last_reason(0) == ExitReason::kProtocolError);
  CHECK(b.sup.slot(0)->last_exit->detail == "frame length 0 outside 1..8388608");
}

TEST_CASE("supervisor: exit codes and announcements become reasons") {
  SupervisorBench b(1);
  b.step();
  b.ready_all();
  b.sup.on_leaving(0, ExitReason::kMemorySoft);
  CHECK(b.state(0) == SlotState::kDraining);
  b.exit(0, 79, 0);
  b.step();
  CHECK(b.last_reason(0) == ExitReason::kMemorySoft);

  b.step(1000);
  b.ready_all();
  b.exit(0, 80, 0);
  b.step();
  CHECK(b.last_reason(0) == ExitReason::kOomKernel);

  b.step(1000);
  b.ready_all();
  b.exit(0, 0, SIGSEGV);
  b.step();
  CHECK(b.last_reason(0) == ExitReason::kSignal);

  b.step(1000);
  b.exit(0, 1, 0);
  b.step();
  CHECK(b.last_reason(0) == ExitReason::kCrash);
}

TEST_CASE("supervisor: a crash loop ends in errored, retried only every errored_retry") {
  auto s = SupervisorBench::settings();
  s.restart.crash_loop_exits = 3;
  s.restart.backoff_initial_ms = 10;
  SupervisorBench b(1, s);
  int spawns = count(b.step(), Action::Kind::kSpawn);
  for (int i = 0; i < 3; ++i) {
    b.exit(0, 1, 0);
    for (int t = 0; t < 200; ++t) spawns += count(b.step(10), Action::Kind::kSpawn);
  }
  CHECK(b.state(0) == SlotState::kErrored);
  CHECK(spawns == 3);
  CHECK_THAT(b.sup.slot(0)->error, Catch::Contains("crash loop: 3 exits in a row"));
  CHECK(b.step(57000).empty());  // 2 s have passed since the last exit
  CHECK(count(b.step(1000), Action::Kind::kSpawn) == 1);
  b.ready_all();
  CHECK(b.sup.slot(0)->error.empty());
}

TEST_CASE("supervisor: init_failed goes to errored after one start") {
  SupervisorBench b(1);
  b.step();
  b.exit(0, 78, 0);
  b.step();
  CHECK(b.state(0) == SlotState::kErrored);
  CHECK(b.last_reason(0) == ExitReason::kInitFailed);
  CHECK(b.step(30000).empty());
}

TEST_CASE("supervisor: scaling down stops the highest slots and removes them once they exit") {
  SupervisorBench b(3);
  b.step();
  b.ready_all();
  b.sup.set_wanted(1);
  auto actions = b.step();
  CHECK(count(actions, Action::Kind::kSendStop) == 2);
  CHECK(b.state(1) == SlotState::kStopping);
  CHECK(b.state(0) == SlotState::kReady);
  b.exit(1, 0, 0);
  b.step();
  CHECK(b.sup.slots().size() == 3);  // slot 2, the last, still has its process
  b.exit(2, 0, 0);
  b.step();
  CHECK(b.sup.slots().size() == 1);
  b.sup.set_wanted(2);
  CHECK(count(b.step(), Action::Kind::kSpawn) == 1);
}

TEST_CASE("supervisor: a worker that ignores stop gets SIGKILL after the stop grace") {
  SupervisorBench b(1);
  b.step();
  b.ready_all();
  b.sup.request_restart(0);
  CHECK(count(b.step(), Action::Kind::kSendStop) == 1);
  CHECK(b.step(9999).empty());
  CHECK(count(b.step(1), Action::Kind::kSignal, SIGKILL) == 1);
  b.exit(0, 0, SIGKILL);
  CHECK(count(b.step(), Action::Kind::kSpawn) == 1);  // a requested restart does not wait
  CHECK(b.last_reason(0) == ExitReason::kStopped);
}

TEST_CASE("supervisor: a restart request starts a slot waiting in backoff at once") {
  SupervisorBench b(1);
  b.step();
  b.exit(0, 1, 0);
  b.step();
  REQUIRE(b.state(0) == SlotState::kBackoff);
  REQUIRE(b.sup.request_restart(0));
  CHECK(count(b.step(), Action::Kind::kSpawn) == 1);
  CHECK_FALSE(b.sup.request_restart(5));
}

TEST_CASE("supervisor: shutdown stops every worker, starts none, and finishes when all exit") {
  SupervisorBench b(2);
  b.step();
  b.ready_all();
  b.sup.begin_shutdown();
  CHECK_FALSE(b.sup.finished());
  CHECK(count(b.step(), Action::Kind::kSendStop) == 2);
  b.exit(0, 0, 0);
  CHECK(b.step(1000).empty());
  CHECK_FALSE(b.sup.finished());
  b.exit(1, 1, 0);
  CHECK(b.step(1000).empty());
  CHECK(b.sup.finished());
}

TEST_CASE("supervisor: events for a slot that has no process are ignored") {
  SupervisorBench b(1);
  b.step();
  b.exit(0, 1, 0);
  b.sup.on_ready(0, b.now);
  b.sup.on_heartbeat(0, b.now, 5, 1, 1);
  b.exit(0, 1, 0);  // a duplicate exit must not count twice
  b.step();
  CHECK(b.sup.slot(0)->history.consecutive == 1);
  CHECK(b.sup.slot(0)->rss_bytes == 0);
}

TEST_CASE("supervisor: a worker leaving at the soft limit is not hard-killed, only overdue") {
  auto s = SupervisorBench::settings();
  s.memory_hard_bytes = 100;
  SupervisorBench b(1, s);
  b.step();
  b.ready_all();
  b.sup.on_leaving(0, ExitReason::kMemorySoft);
  b.sup.on_rss_sample(0, 1000);
  CHECK(b.step(1).empty());  // draining: the hard limit waits
  CHECK(b.step(2999).empty());
  CHECK(count(b.step(1), Action::Kind::kSignal, SIGKILL) == 1);  // kill_grace has passed
  b.exit(0, 0, SIGKILL);
  b.step();
  CHECK(b.last_reason(0) == ExitReason::kMemorySoft);
}

TEST_CASE("supervisor: a scaled count stays while the config's count does not change") {
  SupervisorBench b(2);
  b.sup.scale(3);
  CHECK(b.sup.wanted() == 3);
  CHECK(b.sup.scaled() == 3);
  CHECK_FALSE(b.sup.set_config_wanted(2));  // a reload with the same config: scale stays
  CHECK(b.sup.wanted() == 3);
  CHECK(b.sup.set_config_wanted(4));  // the config changed: it wins
  CHECK(b.sup.wanted() == 4);
  CHECK_FALSE(b.sup.scaled().has_value());
  CHECK(b.sup.set_config_wanted(4));  // nothing scaled: the config's count
  CHECK(b.sup.wanted() == 4);
}

TEST_CASE("supervisor: a slot in backoff says when it is due, and starts at that moment") {
  auto s = SupervisorBench::settings();
  s.restart.backoff_initial_ms = 250;
  s.restart.backoff_max_ms = 250;
  SupervisorBench b(2, s);
  b.step();
  b.ready_all();
  CHECK(b.sup.next_start_due_ms() == 0);  // none waits
  b.exit(0, 1, 0);
  b.step();
  REQUIRE(b.state(0) == SlotState::kBackoff);
  const uint64_t due = b.sup.next_start_due_ms();
  REQUIRE(due > b.now);
  CHECK(due <= b.now + 250);
  // Not a millisecond early, and at once when it is due.
  CHECK(b.step(due - 1 - b.now).empty());
  CHECK(count(b.step(1), Action::Kind::kSpawn) == 1);
  CHECK(b.sup.next_start_due_ms() == 0);
}
