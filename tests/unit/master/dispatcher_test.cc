// The dispatcher places instances on the least-loaded ready worker and, when a worker returns
// empty (a restart, a scale-up), has the busy ones release their excess by checkpoint.
#include <catch2/catch.hpp>

#include <set>

#include <vector>

#include "config/scenario/parse.h"
#include "master/dispatcher.h"
#include "shared/ipc/checkpoint.h"

using corral::master::Dispatcher;
using corral::master::InstanceState;
using corral::master::Run;
using corral::master::Runs;
using corral::ipc::MessageType;
using nlohmann::json;

namespace {

constexpr uint64_t kT = 50000;  // the loop's clock when the tests begin

// A scenario of one request, parsed.
std::shared_ptr<const corral::scenario::Scenario> one_request() {
  auto s = corral::scenario::parse_scenario(json::parse(
      R"({"name": "x", "steps": [{"request": {"url": "http://127.0.0.1:1/"}}]})"));
  REQUIRE(s.is_ok());
  return *s;
}

struct Sent {
  int slot;
  MessageType type;
  json payload;
};

struct Bench {
  Bench()
      : dispatcher(
            runs,
            [this](int slot, MessageType type, const corral::ipc::Payload& payload) {
              sent.push_back({slot, type, payload.json()});
              return true;
            },
            /*per_worker_limit=*/100000) {}

  Run& submit(uint32_t n) {
    auto s = corral::scenario::parse_scenario(json::parse(R"({"name": "poll", "steps": [
        {"request": {"url": "http://127.0.0.1:1/"}, "poll": {"every": "1s", "timeout": "1h",
         "until": [{"status": 200}]}}]})"));
    INFO(s.status().message());
    REQUIRE(s.is_ok());
    return runs.create(*s, json::object(), n, 1000);
  }
  void pump() {
    while (dispatcher.pump(100000)) {
    }
  }
  std::vector<Sent> take(MessageType type) {
    std::vector<Sent> out;
    for (auto& s : sent) {
      if (s.type == type) out.push_back(s);
    }
    sent.clear();
    return out;
  }
  // What a worker answers to a release: `n` of its running instances, checkpointed.
  size_t release(Run& run, int slot, size_t n, uint64_t now_ms) {
    json instances = json::object();
    size_t k = 0;
    for (uint32_t i = 0; i < run.size && k < n; ++i) {
      if (run.instance(i).state != InstanceState::kRunning || run.instance(i).worker != slot)
        continue;
      corral::ipc::Checkpoint cp;
      cp.step_started_ms = 1000;
      cp.attempts = 3;
      cp.wake_ms = 5000;
      instances[run.id][std::to_string(i)] = corral::ipc::to_json(cp);
      ++k;
    }
    auto back = runs.hand_back(slot, instances, "rebalanced");
    REQUIRE(back.is_ok());
    dispatcher.released(slot, *back, now_ms);
    return *back;
  }

  Runs runs;
  std::vector<Sent> sent;
  Dispatcher dispatcher;
};

}  // namespace

TEST_CASE("dispatcher: a worker that returns empty gets half the instances back by checkpoint, "
          "a release at a time") {
  Bench b;
  b.dispatcher.worker_ready(1);
  Run& run = b.submit(1000);
  b.pump();
  REQUIRE(b.dispatcher.load(1) == 1000);
  b.dispatcher.rebalance(kT);
  CHECK(b.take(MessageType::kRelease).empty());  // one worker: nothing to even out

  b.dispatcher.worker_ready(0);  // slot 0 is back, empty
  b.dispatcher.rebalance(kT);
  b.dispatcher.rebalance(kT + Dispatcher::kOverForMs - 1);
  CHECK(b.take(MessageType::kRelease).empty());  // not before the imbalance has lasted
  b.dispatcher.rebalance(kT + Dispatcher::kOverForMs);
  auto asked = b.take(MessageType::kRelease);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].slot == 1);
  CHECK(asked[0].payload == json{{"count", Dispatcher::kReleaseChunk}});
  b.dispatcher.rebalance(kT + 1100);
  CHECK(b.take(MessageType::kRelease).empty());  // one release in flight per worker

  REQUIRE(b.release(run, 1, Dispatcher::kReleaseChunk, kT + 1100) == Dispatcher::kReleaseChunk);
  b.dispatcher.rebalance(kT + 1100);
  CHECK(b.take(MessageType::kRelease).empty());  // the queue is placed first
  b.pump();
  auto starts = b.take(MessageType::kStart);
  REQUIRE_FALSE(starts.empty());
  size_t resumed = 0;
  for (const auto& s : starts) {
    CHECK(s.slot == 0);
    for (const auto& [index, cp] : s.payload["resume"].items()) {
      CHECK(cp["attempts"] == 3);  // the checkpoint the worker released, as it was
      CHECK(cp["wake_ms"] == 5000);
      ++resumed;
    }
  }
  CHECK(resumed == Dispatcher::kReleaseChunk);
  CHECK(b.dispatcher.load(0) == 500);
  CHECK(b.dispatcher.load(1) == 500);
  CHECK(b.dispatcher.moved() == 500);
  CHECK(run.instance(0).worker == 0);  // the first 500 moved
  CHECK(run.instance(0).detail().resume_reasons == std::vector<std::string>{"rebalanced"});

  b.dispatcher.rebalance(kT + 1200);
  CHECK(b.take(MessageType::kRelease).empty());  // even now
}

TEST_CASE(
    "dispatcher: instances resumed from checkpoints are placed a slice at a time, fresh "
    "ones a chunk at a time") {
  Bench b;
  b.dispatcher.worker_ready(1);
  Run& run = b.submit(1000);
  b.pump();
  b.dispatcher.worker_ready(0);
  REQUIRE(b.release(run, 1, 500, kT) == 500);
  b.take(MessageType::kStart);
  // A slice already over: each call places a few of the 500, not a chunk of them.
  const corral::uv::Slice over(0);
  REQUIRE(b.dispatcher.pump(100000, &over));
  auto starts = b.take(MessageType::kStart);
  REQUIRE(starts.size() == 1);
  CHECK(starts[0].payload["resume"].size() == 15);
  size_t calls = 1;
  while (b.dispatcher.pump(100000, &over)) ++calls;
  CHECK(calls >= 500 / 15);
  CHECK(b.dispatcher.load(0) == 500);  // all of them in the end
  // Fresh instances cost little each: a chunk goes out whatever the slice.
  b.submit(600);
  b.take(MessageType::kStart);
  b.dispatcher.pump(100000, &over);
  starts = b.take(MessageType::kStart);
  REQUIRE_FALSE(starts.empty());
  CHECK(starts[0].payload["count"] == 300);  // 600 spread over 2 workers
}

TEST_CASE("dispatcher: loads within a tenth of the mean are left alone, and a worker that "
          "released fewer than asked is not asked again for a second") {
  Bench b;
  b.dispatcher.worker_ready(0);
  b.dispatcher.worker_ready(1);
  b.dispatcher.worker_ready(2);
  Run& run = b.submit(3000);
  b.pump();
  CHECK(b.dispatcher.load(0) == 1000);
  b.dispatcher.worker_gone(2);  // its 1,000 instances are lost with it in this bench
  b.dispatcher.worker_ready(2);
  b.dispatcher.rebalance(kT);
  b.dispatcher.rebalance(kT + 1000);
  auto asked = b.take(MessageType::kRelease);
  REQUIRE(asked.size() == 2);  // 1000, 1000, 0: slots 0 and 1 each give their excess
  CHECK(asked[0].payload["count"] == 333);
  CHECK(asked[1].payload["count"] == 333);

  // Slot 0 had only 10 waiting instances (the rest were in flight); slot 1 released all 333.
  b.release(run, 0, 10, kT + 1000);
  b.release(run, 1, 333, kT + 1000);
  b.pump();
  CHECK(b.dispatcher.load(2) == 343);
  b.sent.clear();
  b.dispatcher.rebalance(kT + 1500);  // 990, 667, 343: slot 0 pauses, slot 1 holds its share
  CHECK(b.take(MessageType::kRelease).empty());
  b.dispatcher.rebalance(kT + 2000);
  asked = b.take(MessageType::kRelease);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].slot == 0);
  CHECK(asked[0].payload["count"] == 990 - 667);

  // Loads within a tenth of the mean are even enough: 540 and 460 stay, 560 and 440 do not.
  for (uint32_t first : {540u, 560u}) {
    Bench two;
    two.dispatcher.worker_ready(0);
    two.submit(first);
    two.pump();
    two.dispatcher.worker_ready(1);
    two.submit(1000 - first);
    two.pump();
    CHECK(two.dispatcher.load(1) == 1000 - first);
    two.dispatcher.rebalance(kT);
    two.dispatcher.rebalance(kT + 1000);
    asked = two.take(MessageType::kRelease);
    if (first == 540) {
      CHECK(asked.empty());
    } else {
      REQUIRE(asked.size() == 1);
      CHECK(asked[0].payload["count"] == 60);
    }
  }
}

TEST_CASE("dispatcher: a worker asked to release goes on until it holds its share, not just "
          "until it is within the tolerance") {
  Bench b;
  b.dispatcher.worker_ready(1);
  Run& run = b.submit(2200);
  b.pump();
  b.dispatcher.worker_ready(0);
  b.dispatcher.rebalance(kT);
  std::vector<uint32_t> counts;
  for (uint64_t t = kT + 1000; t < kT + 2000; t += 100) {
    b.dispatcher.rebalance(t);
    for (const Sent& s : b.take(MessageType::kRelease)) {
      uint32_t n = s.payload["count"];
      counts.push_back(n);
      b.release(run, s.slot, n, t);
      b.pump();
    }
  }
  // 2200/0, 1700/500, 1200/1000 (within a tenth of 1100, but still over), 1100/1100.
  CHECK(counts == std::vector<uint32_t>{500, 500, 100});
  CHECK(b.dispatcher.load(0) == 1100);
  CHECK(b.dispatcher.load(1) == 1100);
}

TEST_CASE("dispatcher: a run smaller than a start frame is spread over the ready workers") {
  Bench b;
  b.dispatcher.worker_ready(0);
  b.dispatcher.worker_ready(1);
  b.dispatcher.worker_ready(2);
  b.submit(200);
  b.pump();
  CHECK(b.dispatcher.load(0) == 67);
  CHECK(b.dispatcher.load(1) == 67);
  CHECK(b.dispatcher.load(2) == 66);
  b.submit(1);
  b.pump();
  CHECK(b.dispatcher.load(2) == 67);  // the least loaded takes it
}

TEST_CASE("dispatcher: a held run places nothing until it is let go, and others pass it") {
  Bench b;
  b.dispatcher.worker_ready(0);
  Run& held = b.submit(5);
  held.held = true;  // a schedule's run, not yet in the journal
  Run& other = b.submit(3);
  b.pump();
  CHECK(held.count(InstanceState::kQueued) == 5);
  CHECK(other.count(InstanceState::kRunning) == 3);
  held.held = false;
  b.pump();
  CHECK(held.count(InstanceState::kRunning) == 5);
  CHECK(b.dispatcher.load(0) == 8);
}

TEST_CASE("dispatcher: a slot held for a reload gets no work, and says why when every slot is") {
  Bench b;
  std::set<int> held = {0, 1};
  b.dispatcher.set_holds([&held](int slot) { return held.count(slot) != 0; });
  b.dispatcher.worker_ready(0);
  b.dispatcher.worker_ready(1);
  Run& run = b.submit(10);
  b.pump();
  CHECK(run.count(InstanceState::kQueued) == 10);
  CHECK(b.dispatcher.blocked().kind == "reload");
  held = {1};  // slot 0 runs the new worker
  b.pump();
  CHECK(b.dispatcher.load(0) == 10);
  CHECK(b.dispatcher.load(1) == 0);
  CHECK(b.dispatcher.blocked().kind.empty());
}

TEST_CASE("dispatcher: a quarantined run places nothing until it is resumed") {
  Bench b;
  b.dispatcher.worker_ready(0);
  Run& sick = b.submit(4);
  sick.quarantine = "3 workers died while running its instances";
  Run& other = b.submit(2);
  b.pump();
  CHECK(sick.count(InstanceState::kQueued) == 4);
  CHECK(other.count(InstanceState::kRunning) == 2);
  CHECK(b.runs.resume(sick));
  b.pump();
  CHECK(sick.count(InstanceState::kRunning) == 4);
}

TEST_CASE("dispatcher: workers take no more than fits in their memory, and the rest waits, with why") {
  Bench b;
  constexpr uint64_t kMiB = 1 << 20;
  b.dispatcher.memory().set_budget(32 * kMiB);
  b.dispatcher.worker_ready(0);
  b.dispatcher.worker_ready(1);
  b.dispatcher.memory().sample(0, 16 * kMiB, 16 * kMiB, 0);
  b.dispatcher.memory().sample(1, 16 * kMiB, 16 * kMiB, 0);
  Run& run = b.submit(20000);
  b.pump();
  // 16 MiB of room at the first guess of 4 KiB an instance: 4,096 each.
  CHECK(b.dispatcher.load(0) == 4096);
  CHECK(b.dispatcher.load(1) == 4096);
  CHECK(run.pending() == 20000 - 2 * 4096);
  Dispatcher::Blocked why = b.dispatcher.blocked();
  CHECK(why.kind == "memory");
  CHECK_THAT(why.why, Catch::Contains("about 4096 instances of 4096 bytes (a first guess"));

  // Heartbeats measure 1 KiB an instance: room for 16,384 each.
  b.dispatcher.memory().sample(0, 20 * kMiB, 16 * kMiB, 4096);
  b.dispatcher.memory().sample(1, 20 * kMiB, 16 * kMiB, 4096);
  b.pump();
  CHECK(b.dispatcher.load(0) + b.dispatcher.load(1) == 20000);
  CHECK(run.pending() == 0);
  CHECK(b.dispatcher.blocked().kind.empty());
}

TEST_CASE("dispatcher: worker_instances caps a worker below its memory, and says so") {
  Runs runs;
  Dispatcher d(
      runs, [](int, MessageType, const corral::ipc::Payload&) { return true; },
      /*per_worker_limit=*/10);
  d.worker_ready(0);
  const auto s = one_request();
  runs.create(s, json::object(), 25, 1000);
  while (d.pump(1000)) {
  }
  CHECK(d.load(0) == 10);
  CHECK(d.blocked().kind == "worker_instances");
  CHECK(d.blocked().why == "every worker holds worker_instances (10) instances");
  d.worker_gone(0);
  CHECK(d.blocked().kind == "no_worker");
}

namespace {

// Ends `n` of `run`'s running instances as passed, as their workers would report them.
void end_running(Run& run, Dispatcher& d, uint32_t n) {
  for (uint32_t i = 0; i < run.size && n > 0; ++i) {
    if (run.instance(i).state != InstanceState::kRunning) continue;
    d.instance_done(run.instance(i).worker);
    run.set_state(i, InstanceState::kPassed);
    --n;
  }
}

}  // namespace

TEST_CASE("dispatcher: a small run behind a large one that fills the workers starts first") {
  Runs runs;
  Dispatcher d(
      runs, [](int, MessageType, const corral::ipc::Payload&) { return true; },
      /*per_worker_limit=*/50);
  d.worker_ready(0);
  d.worker_ready(1);
  const auto s = one_request();
  Run& large = runs.create(s, json::object(), 10000, 1000);
  while (d.pump(1000)) {
  }
  CHECK(large.count(InstanceState::kRunning) == 100);
  Run& small = runs.create(s, json::object(), 10, 1001);
  while (d.pump(1000)) {
  }
  CHECK(small.count(InstanceState::kRunning) == 0);  // no room: nothing running is moved

  // Each instance that ends makes room for the run with the fewest running: the small one.
  end_running(large, d, 6);
  while (d.pump(1000)) {
  }
  CHECK(small.count(InstanceState::kRunning) == 6);
  CHECK(large.count(InstanceState::kRunning) == 94);
  end_running(large, d, 10);
  while (d.pump(1000)) {
  }
  CHECK(small.count(InstanceState::kRunning) == 10);
  CHECK(small.pending() == 0);
  CHECK(large.count(InstanceState::kRunning) == 90);  // and then the large one again
  CHECK(large.pending() == 10000 - 100 - 6);
}

TEST_CASE("dispatcher: two large runs waiting together share the workers' room evenly") {
  Runs runs;
  Dispatcher d(
      runs, [](int, MessageType, const corral::ipc::Payload&) { return true; },
      /*per_worker_limit=*/500);
  const auto s = one_request();
  Run& a = runs.create(s, json::object(), 100000, 1000);
  Run& b = runs.create(s, json::object(), 100000, 1001);
  d.worker_ready(0);
  d.worker_ready(1);
  while (d.pump(1000)) {
  }
  CHECK(a.count(InstanceState::kRunning) == 500);
  CHECK(b.count(InstanceState::kRunning) == 500);
  // As instances of the first end, the second does not take their room: the first is behind.
  end_running(a, d, 300);
  while (d.pump(1000)) {
  }
  CHECK(a.count(InstanceState::kRunning) == 500);
  CHECK(b.count(InstanceState::kRunning) == 500);
}

TEST_CASE("dispatcher: a run's priority weighs its share: 3 to 1 takes three quarters of the room") {
  Runs runs;
  Dispatcher d(
      runs, [](int, MessageType, const corral::ipc::Payload&) { return true; },
      /*per_worker_limit=*/400);
  const auto s = one_request();
  Run& low = runs.create(s, json::object(), 100000, 1000);
  Run& high = runs.create(s, json::object(), 100000, 1001, /*priority=*/3);
  CHECK(high.priority == 3);
  d.worker_ready(0);
  d.worker_ready(1);
  while (d.pump(1000)) {
  }
  // 800 places: within one quantum of 600 and 200.
  CHECK(low.count(InstanceState::kRunning) + high.count(InstanceState::kRunning) == 800);
  CHECK(high.count(InstanceState::kRunning) >= 500);
  CHECK(high.count(InstanceState::kRunning) <= 700);
  // Room that frees up afterwards goes where the shares are furthest from 3 to 1.
  end_running(high, d, 200);
  while (d.pump(1000)) {
  }
  CHECK(high.count(InstanceState::kRunning) >= 500);
}

TEST_CASE("dispatcher: define_run tells each worker the run's size and creation, for the spread") {
  Bench b;
  b.dispatcher.worker_ready(0);
  Run& run = b.submit(1200);
  b.pump();
  auto defined = b.take(MessageType::kDefineRun);
  REQUIRE(defined.size() == 1);
  CHECK(defined[0].payload["size"] == 1200);
  CHECK(defined[0].payload["created_ms"] == run.created_ms);
}

TEST_CASE("dispatcher: a call the master holds goes with its instance to the next worker, until "
          "the step that used it ends") {
  Bench b;
  b.dispatcher.worker_ready(0);
  Run& run = b.submit(3);
  b.pump();
  b.take(MessageType::kStart);
  run.callbacks[1] = {{"step", 0}, {"body", {{"status", "done"}}}};
  REQUIRE(b.runs.requeue_worker(0, "signal", std::nullopt, false) == 3);
  b.dispatcher.worker_gone(0);
  b.dispatcher.worker_ready(2);
  b.pump();
  auto starts = b.take(MessageType::kStart);
  REQUIRE(starts.size() == 1);
  const json& resume = starts[0].payload["resume"];
  REQUIRE(resume.size() == 3);
  CHECK(resume["1"]["callback"] == run.callbacks[1]);
  CHECK_FALSE(resume["0"].contains("callback"));
  auto cp = corral::ipc::checkpoint_from_json(resume["1"]);
  REQUIRE(cp.is_ok());  // a checkpoint the worker reads
  CHECK(cp->callback["body"]["status"] == "done");
  // The worker reports the step that used it: the master forgets it.
  corral::ipc::Event ev;
  ev.kind = corral::ipc::EventKind::kStep;
  ev.run = run.id;
  ev.index = 1;
  ev.step = 0;
  ev.outcome = corral::ipc::Outcome::kPassed;
  b.runs.apply(2, ev, 2000);
  CHECK(run.callbacks.empty());
}
