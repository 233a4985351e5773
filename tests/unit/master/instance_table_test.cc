// An instance has a record in the master from its first placement on: a run whose instances
// wait in the queue holds none, and growing the table never moves a record already held.
#include <catch2/catch.hpp>

#include "config/scenario/parse.h"
#include "master/dispatcher.h"

using corral::master::Dispatcher;
using corral::master::InstanceDetail;
using corral::master::InstanceRecord;
using corral::master::InstanceState;
using corral::master::InstanceTable;
using corral::master::Run;
using corral::master::Runs;
using nlohmann::json;

namespace {

std::shared_ptr<const corral::scenario::Scenario> one_request() {
  auto s = corral::scenario::parse_scenario(
      json::parse(R"({"name": "x", "steps": [{"request": {"url": "http://127.0.0.1:1/"}}]})"));
  REQUIRE(s.is_ok());
  return *s;
}

}  // namespace

TEST_CASE("instance table: a record is made on first use, and never moves") {
  InstanceTable t;
  CHECK(t.find(0) == nullptr);
  InstanceRecord& far = t.at(5000);  // page 4 only
  far.next_step = 3;
  CHECK(t.held() == InstanceTable::kPage);
  CHECK(t.find(0) == nullptr);
  CHECK(t.find(5001) != nullptr);  // the same page, a queued record
  for (uint32_t i = 0; i < 20 * InstanceTable::kPage; i += 7) t.at(i);
  CHECK(&t.at(5000) == &far);
  CHECK(far.next_step == 3);
  uint32_t seen = 0, last = 0;
  t.each(20 * InstanceTable::kPage, [&](uint32_t i, const InstanceRecord&) {
    CHECK((seen == 0 || i == last + 1));
    last = i;
    ++seen;
  });
  CHECK(seen == 20 * InstanceTable::kPage);
  t.clear();
  CHECK(t.held() == 0);
}

TEST_CASE("instance table: a record holds its detail only once something is written to it") {
  // Placing a million instances makes a million records: each is small until its instance
  // ends a step, is resumed or ends.
  CHECK(sizeof(InstanceRecord) <= 48);
  InstanceTable t;
  const InstanceDetail* none = &t.at(5).detail();
  CHECK(none->steps.empty());
  CHECK(none->vars.is_null());
  t.at(5).make_detail().reason = "boom";
  CHECK(&t.at(5).detail() != none);
  CHECK(t.at(5).detail().reason == "boom");
  CHECK(&t.at(6).detail() == none);  // the others still share the empty one
  CHECK(t.at(6).detail().reason.empty());
}

TEST_CASE("runs: a million queued instances hold no record, and placing some holds only theirs") {
  Runs runs;
  Run& run = runs.create(one_request(), json::object(), 1000000, 1000);
  CHECK(run.instances.held() == 0);
  CHECK(run.count(InstanceState::kQueued) == 1000000);
  CHECK(run.instance(999999).state == InstanceState::kQueued);
  CHECK(run.instances.held() == 0);  // reading one makes no record

  Dispatcher d(
      runs, [](int, auto, const corral::ipc::Payload&) { return true; }, /*per_worker_limit=*/1500);
  d.worker_ready(0);
  while (d.pump(100000)) {
  }
  CHECK(run.count(InstanceState::kRunning) == 1500);
  CHECK(run.instances.held() == 2 * InstanceTable::kPage);
  CHECK(run.instance(1499).state == InstanceState::kRunning);
  CHECK(run.instance(1499).worker == 0);
  CHECK(run.instance(1500).state == InstanceState::kQueued);
}

TEST_CASE("runs: cancelling a run cancels the instances never placed too, without records") {
  Runs runs;
  Run& run = runs.create(one_request(), json::object(), 1000000, 1000);
  Dispatcher d(
      runs, [](int, auto, const corral::ipc::Payload&) { return true; }, /*per_worker_limit=*/10);
  d.worker_ready(0);
  d.pump(100);
  REQUIRE(run.count(InstanceState::kRunning) == 10);
  CHECK(runs.cancel(run, 2000) == 1000000);
  CHECK(run.count(InstanceState::kCancelled) == 1000000);
  CHECK(run.count(InstanceState::kQueued) == 0);
  CHECK(run.finished());
  CHECK(run.instances.held() == InstanceTable::kPage);
  CHECK(run.instance(5).state == InstanceState::kCancelled);
  CHECK(run.instance(5).ended_ms == 2000);
  CHECK(run.instance(999999).state == InstanceState::kCancelled);
  json never = runs.instance_json(run, 999999, false);
  CHECK(never["state"] == "cancelled");
  CHECK(never["ended_at"] == runs.instance_json(run, 5, false)["ended_at"]);
}

TEST_CASE("runs: a dead worker's instances go back to the queue a slice at a time") {
  Runs runs;
  Run& a = runs.create(one_request(), json::object(), 3000, 1000);
  Run& b = runs.create(one_request(), json::object(), 10, 1000);
  std::vector<uint32_t> all(3000);
  for (uint32_t i = 0; i < 3000; ++i) all[i] = i;
  a.take_fresh(3000);
  runs.mark_running(a, all, 0, 1000);
  b.take_fresh(10);
  runs.mark_running(b, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, 1000);  // on another worker
  size_t done = 0;
  std::vector<std::string> had;
  runs.requeue_worker(
      {0, "worker_killed", std::nullopt, false, [&](size_t n, const std::vector<std::string>& r) {
         done = n;
         had = r;
       }});
  CHECK(runs.requeuing(0));
  CHECK_FALSE(runs.requeuing(1));
  CHECK(runs.requeue_work(corral::uv::Slice(0)));  // a slice that is over at once: 64 of them
  CHECK(a.count(InstanceState::kQueued) == 64);
  CHECK(done == 0);
  size_t turns = 1;
  while (runs.requeue_work(corral::uv::Slice(0))) ++turns;
  CHECK(turns + 1 == (3000 + 63) / 64);  // 64 per slice, the last one returning false
  CHECK_FALSE(runs.requeuing(0));
  CHECK(done == 3000);
  CHECK(had == std::vector<std::string>{a.id});
  CHECK(a.count(InstanceState::kQueued) == 3000);
  CHECK(a.requeued.size() == 3000);
  CHECK(a.instance(2999).detail().resume_reasons == std::vector<std::string>{"worker_killed"});
  CHECK(b.count(InstanceState::kRunning) == 10);
}

TEST_CASE("runs: a requeue goes on past a run cancelled and a run added meanwhile") {
  Runs runs;
  Run& a = runs.create(one_request(), json::object(), 200, 1000);
  Run& b = runs.create(one_request(), json::object(), 200, 1000);
  for (Run* r : {&a, &b}) {
    std::vector<uint32_t> all(200);
    for (uint32_t i = 0; i < 200; ++i) all[i] = i;
    r->take_fresh(200);
    runs.mark_running(*r, all, 0, 1000);
  }
  size_t done = SIZE_MAX;
  runs.requeue_worker({0, "worker_crash", std::nullopt, false,
                       [&](size_t n, const std::vector<std::string>&) { done = n; }});
  CHECK(runs.requeue_work(corral::uv::Slice(0)));
  runs.cancel(a, 2000);
  Run& c = runs.create(one_request(), json::object(), 5, 2000);
  while (runs.requeue_work(corral::uv::Slice(0))) {
  }
  CHECK(done == 64 + 200);  // what a had requeued before it was cancelled, and all of b
  CHECK(b.count(InstanceState::kQueued) == 200);
  CHECK(a.count(InstanceState::kCancelled) == 200);
  CHECK(c.instances.held() == 0);
}

TEST_CASE(
    "dispatcher: a slot gets no work while its dead worker's instances go back to the queue") {
  Runs runs;
  Run& run = runs.create(one_request(), json::object(), 200, 1000);
  std::vector<int> placed_on;
  Dispatcher d(
      runs,
      [&](int slot, corral::ipc::MessageType type, const corral::ipc::Payload&) {
        if (type == corral::ipc::MessageType::kStart) placed_on.push_back(slot);
        return true;
      },
      /*per_worker_limit=*/1000);
  d.worker_ready(0);
  while (d.pump(1000)) {
  }
  REQUIRE(run.count(InstanceState::kRunning) == 200);
  d.worker_gone(0);
  runs.requeue_worker({0, "worker_killed", std::nullopt, false, nullptr});
  d.worker_ready(0);  // its new worker, ready before the requeue has ended
  placed_on.clear();
  CHECK(runs.requeue_work(corral::uv::Slice(0)));  // 64 of 200 back in the queue
  CHECK_FALSE(d.pump(1000));
  CHECK(placed_on.empty());
  CHECK(d.capacity() == 0);
  while (runs.requeue_work(corral::uv::Slice(0))) {
  }
  while (d.pump(1000)) {
  }
  CHECK(placed_on == std::vector<int>{0});
  CHECK(run.count(InstanceState::kRunning) == 200);
}
