#include <catch2/catch.hpp>

#include <csignal>

#include "tests/unit/master/supervisor_bench.h"

using corral::master::ReloadStatus;
using corral::master::SlotState;
using corral::master::SuccessorState;
using corral::master::SupervisorSettings;
using corral::test::SupervisorBench;
using corral::test::count;
using Kind = corral::master::Action::Kind;
using Phase = ReloadStatus::Phase;

namespace {

// Two ready workers (pids 100 and 101) with a 5 s grace and a 10 s ready timeout.
SupervisorBench ready_pair() {
  SupervisorBench b(2);
  b.step();
  b.ready_all();
  return b;
}

void start_reload(SupervisorBench& b) {
  std::string why;
  REQUIRE(b.sup.request_reload(b.now, &why));
  CHECK(why.empty());
}

bool has(const std::vector<corral::master::Action>& as, Kind k, int slot, bool successor) {
  for (const auto& a : as) {
    if (a.kind == k && a.slot == slot && a.successor == successor) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("supervisor reload: the new worker starts beside the old one, which is stopped only "
          "after the grace, and the slot adopts it when the old one has gone") {
  SupervisorBench b = ready_pair();
  start_reload(b);
  auto first = b.step();
  REQUIRE(has(first, Kind::kSpawn, 0, true));
  CHECK(count(first, Kind::kSpawn) == 1);
  CHECK(b.sup.slot(0)->pid == 100);  // the old worker keeps its slot and its work
  CHECK(b.state(0) == SlotState::kReady);
  CHECK(b.sup.slot(0)->successor->pid == 102);

  b.ready_successors();
  CHECK(b.sup.slot(0)->successor->state == SuccessorState::kProbation);
  b.sup.on_successor_heartbeat(0, b.now + 2000, 1 << 20);
  b.sup.on_successor_heartbeat(0, b.now + 4000, 1 << 20);
  CHECK(b.step(4999).empty());  // healthy, but the grace has not passed
  auto promote = b.step(1);
  REQUIRE(count(promote, Kind::kSendStop) == 1);
  CHECK(has(promote, Kind::kSendStop, 0, false));
  CHECK(b.sup.slot(0)->successor->state == SuccessorState::kPromoted);
  CHECK(b.sup.reload().replaced.empty());

  b.exit(0, 0, 0);  // the old worker handed its instances back and left
  auto adopt = b.step();
  CHECK(has(adopt, Kind::kAdopt, 0, false));
  CHECK(b.state(0) == SlotState::kReady);
  CHECK(b.sup.slot(0)->pid == 102);
  CHECK_FALSE(b.sup.slot(0)->successor);
  CHECK(b.sup.slot(0)->restarts == 1);
  CHECK(b.sup.reload().replaced == std::vector<int>{0});
  CHECK(has(adopt, Kind::kSpawn, 1, true));  // then the next slot, the same way

  b.ready_successors();
  b.sup.on_heartbeat(0, b.now + 3000, 1, 0, 0);
  b.sup.on_heartbeat(1, b.now + 3000, 1, 0, 0);
  b.sup.on_successor_heartbeat(1, b.now + 3000, 1);
  CHECK(count(b.step(5000), Kind::kSendStop) == 1);
  b.exit(1, 0, 0);
  b.step();
  CHECK(b.sup.slot(1)->pid == 103);
  CHECK(b.sup.reload().phase == Phase::kDone);
  CHECK(b.sup.reload().replaced == std::vector<int>{0, 1});
  CHECK(b.sup.slot(0)->generation != b.sup.slot(1)->generation);
}

TEST_CASE("supervisor reload: a new worker not ready in time is killed, the reload stops and "
          "the old worker keeps its slot") {
  SupervisorBench b = ready_pair();
  start_reload(b);
  b.step();
  b.sup.on_heartbeat(0, b.now + 9000, 1, 0, 0);
  b.sup.on_heartbeat(1, b.now + 9000, 1, 0, 0);
  CHECK(b.step(10000).empty());
  auto kill = b.step(1);
  CHECK(has(kill, Kind::kSignal, 0, true));
  CHECK(count(kill, Kind::kSignal, SIGKILL) == 1);
  CHECK(count(kill, Kind::kSendStop) == 0);
  const ReloadStatus& r = b.sup.reload();
  CHECK(r.phase == Phase::kFailed);
  CHECK(r.slot == 0);
  CHECK_THAT(r.error, Catch::Contains("not ready within 10s"));
  CHECK(b.sup.slot(0)->pid == 100);
  CHECK(b.state(0) == SlotState::kReady);

  b.sup.on_successor_failed(0, "exited: signal (SIGKILL)", true, b.now);
  CHECK(b.step().empty());  // nothing else: slot 1 is not touched
  CHECK_FALSE(b.sup.slot(0)->successor);
  CHECK(b.sup.slot(1)->pid == 101);
  CHECK(b.sup.reload().error == r.error);  // the first reason stays
}

TEST_CASE("supervisor reload: a new worker that dies or goes silent during its grace fails the "
          "reload") {
  SupervisorBench b = ready_pair();
  start_reload(b);
  b.step();
  b.ready_successors();

  SECTION("it exits") {
    b.sup.on_successor_failed(0, "exited: crash (exit 3)", true, b.now + 100);
    auto after = b.step(100);
    CHECK(count(after, Kind::kSignal) == 0);  // it is gone already
    CHECK(b.sup.reload().phase == Phase::kFailed);
    CHECK_THAT(b.sup.reload().error, Catch::Contains("its new worker exited: crash (exit 3)"));
  }
  SECTION("it stops heartbeating") {
    b.sup.on_heartbeat(0, b.now + 4900, 1, 0, 0);
    b.sup.on_heartbeat(1, b.now + 4900, 1, 0, 0);
    CHECK(b.step(4900).empty());
    auto kill = b.step(200);
    CHECK(has(kill, Kind::kSignal, 0, true));
    CHECK_THAT(b.sup.reload().error, Catch::Contains("sent no heartbeat"));
  }
  SECTION("it breaks the protocol") {
    b.sup.on_successor_failed(0, "broke the protocol: bad frame", false, b.now);
    auto kill = b.step();
    CHECK(has(kill, Kind::kSignal, 0, true));
    CHECK(b.step(1000).empty());  // killed once
  }
  CHECK(b.sup.slot(0)->pid == 100);
  CHECK(b.sup.slot(1)->pid == 101);
  CHECK(b.state(0) == SlotState::kReady);
}

TEST_CASE("supervisor reload: one at a time, and none while the daemon stops") {
  SupervisorBench b = ready_pair();
  start_reload(b);
  b.step();
  std::string why;
  CHECK_FALSE(b.sup.request_reload(b.now, &why));
  CHECK_THAT(why, Catch::Contains("reload 1 is still running (slot 0, 0 of 2 replaced)"));

  b.sup.begin_shutdown();
  CHECK_FALSE(b.sup.request_reload(b.now, &why));
  CHECK(why == "the daemon is stopping");
  auto stop = b.step();
  CHECK(has(stop, Kind::kSignal, 0, true));  // the new worker has no work: killed
  CHECK(count(stop, Kind::kSendStop) == 2);
  b.exit(0, 0, 0);
  b.exit(1, 0, 0);
  b.step();
  CHECK_FALSE(b.sup.finished());  // the new worker has not exited yet
  b.sup.on_successor_failed(0, "exited: signal (SIGKILL)", true, b.now);
  b.step();
  CHECK(b.sup.finished());
}

TEST_CASE("supervisor reload: when the old worker dies during the grace, the slot waits for the "
          "new one instead of restarting") {
  SupervisorBench b = ready_pair();
  start_reload(b);
  b.step();
  b.ready_successors();
  b.exit(0, 1, 0);
  CHECK(b.step(1000).empty());  // no restart from the old image
  CHECK(b.state(0) == SlotState::kExited);
  b.sup.on_successor_heartbeat(0, b.now + 3000, 1);
  b.sup.on_heartbeat(1, b.now + 3000, 1, 0, 0);
  auto adopt = b.step(4000);
  CHECK(has(adopt, Kind::kAdopt, 0, false));
  CHECK(count(adopt, Kind::kSendStop) == 0);
  CHECK(b.sup.slot(0)->pid == 102);
  CHECK(b.state(0) == SlotState::kReady);
}

TEST_CASE("supervisor reload: a slot without a worker (errored) gets the new one after its gate") {
  auto s = SupervisorBench::settings();
  s.restart.crash_loop_exits = 1;
  SupervisorBench b(1, s);
  b.step();
  b.exit(0, 1, 0);
  b.step();
  REQUIRE(b.state(0) == SlotState::kErrored);
  start_reload(b);
  auto spawn = b.step();
  REQUIRE(has(spawn, Kind::kSpawn, 0, true));
  b.ready_successors();
  auto adopt = b.step(5000);
  CHECK(has(adopt, Kind::kAdopt, 0, false));
  CHECK(b.state(0) == SlotState::kReady);
  CHECK(b.sup.slot(0)->error.empty());
  CHECK(b.sup.reload().phase == Phase::kDone);
}

TEST_CASE("supervisor reload: a slot scaled away during a reload is stopped, not replaced, and "
          "the reload ends with the slots that remain") {
  SupervisorBench b = ready_pair();
  start_reload(b);
  REQUIRE(has(b.step(), Kind::kSpawn, 0, true));
  b.sup.set_wanted(1);  // slot 1 goes away while slot 0's new worker is on probation
  auto scaled = b.step();
  CHECK(has(scaled, Kind::kSendStop, 1, false));
  CHECK_FALSE(has(scaled, Kind::kSpawn, 1, true));
  b.exit(1, 0, 0);
  b.step();

  b.ready_successors();
  b.sup.on_successor_heartbeat(0, b.now + 3000, 1 << 20);
  b.sup.on_heartbeat(0, b.now + 3000, 1, 0, 0);
  CHECK(count(b.step(5000), Kind::kSendStop) == 1);
  b.exit(0, 0, 0);
  auto adopt = b.step();
  CHECK(has(adopt, Kind::kAdopt, 0, false));
  CHECK_FALSE(has(adopt, Kind::kSpawn, 1, true));  // no successor for the slot scaled away
  CHECK(b.sup.reload().phase == Phase::kDone);
  CHECK(b.sup.reload().replaced == std::vector<int>{0});
  CHECK(b.sup.slot(0)->pid == 102);
  CHECK(b.sup.slots().size() == 1);
}

TEST_CASE("supervisor reload: a new worker past the hard memory limit during its grace is killed "
          "and the old one keeps its slot") {
  SupervisorSettings s = SupervisorBench::settings();
  s.memory_hard_bytes = 100 << 20;
  SupervisorBench b(2, s);
  b.step();
  b.ready_all();
  start_reload(b);
  b.step();
  b.ready_successors();
  b.sup.on_successor_heartbeat(0, b.now + 1000, 50 << 20);
  b.sup.on_heartbeat(0, b.now + 1000, 1, 0, 0);
  b.sup.on_heartbeat(1, b.now + 1000, 1, 0, 0);
  CHECK(count(b.step(1000), Kind::kSignal) == 0);  // under the limit: on probation still
  b.sup.on_successor_heartbeat(0, b.now + 1000, 101 << 20);
  auto kill = b.step(1000);
  CHECK(has(kill, Kind::kSignal, 0, true));
  CHECK(count(kill, Kind::kSendStop) == 0);
  CHECK(b.sup.reload().phase == Phase::kFailed);
  CHECK_THAT(b.sup.reload().error, Catch::Contains("passed the hard memory limit"));
  CHECK(b.sup.slot(0)->pid == 100);
  CHECK(b.state(0) == SlotState::kReady);
}

TEST_CASE(
    "supervisor reload: new work is held off the old workers, and off every worker while "
    "an old one hands its instances back, so that each instance moves once") {
  SupervisorBench b = ready_pair();
  CHECK_FALSE(b.sup.reload_holds(0));
  start_reload(b);
  b.step();                      // slot 0's new worker starts
  CHECK(b.sup.reload_holds(0));  // slot 0's old worker is being replaced
  CHECK(b.sup.reload_holds(1));  // slot 1's is next
  b.ready_successors();
  b.sup.on_successor_heartbeat(0, b.now + 4000, 1 << 20);
  b.sup.on_heartbeat(1, b.now + 4000, 1, 0, 0);
  REQUIRE(count(b.step(5000), Kind::kSendStop) == 1);  // slot 0's old worker stops
  CHECK(b.sup.reload_holds(0));
  CHECK(b.sup.reload_holds(1));
  b.exit(0, 0, 0);
  b.step();                            // slot 0 adopts its new worker, slot 1's starts
  CHECK_FALSE(b.sup.reload_holds(0));  // the new worker takes work
  CHECK(b.sup.reload_holds(1));
  b.ready_successors();
  b.sup.on_heartbeat(0, b.now + 3000, 1, 0, 0);
  b.sup.on_successor_heartbeat(1, b.now + 3000, 1);
  REQUIRE(count(b.step(5000), Kind::kSendStop) == 1);  // slot 1's old worker stops
  CHECK(b.sup.reload_holds(0));                        // its instances wait for slot 1's new worker
  b.exit(1, 0, 0);
  b.step();
  CHECK(b.sup.reload().phase == Phase::kDone);
  CHECK_FALSE(b.sup.reload_holds(0));
  CHECK_FALSE(b.sup.reload_holds(1));
}

TEST_CASE("supervisor reload: a failed reload holds no work") {
  SupervisorBench b = ready_pair();
  start_reload(b);
  b.step();
  REQUIRE(b.sup.reload_holds(0));
  b.sup.on_successor_failed(0, "it left", true, b.now);
  b.step();
  CHECK(b.sup.reload().phase == Phase::kFailed);
  CHECK_FALSE(b.sup.reload_holds(0));
  CHECK_FALSE(b.sup.reload_holds(1));
}
