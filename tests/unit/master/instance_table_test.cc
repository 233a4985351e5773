// An instance has a record in the master from its first placement on: a run whose instances
// wait in the queue holds none, and growing the table never moves a record already held.
#include <catch2/catch.hpp>

#include "config/scenario/parse.h"
#include "master/dispatcher.h"

using corral::master::Dispatcher;
using corral::master::InstanceRecord;
using corral::master::InstanceState;
using corral::master::InstanceTable;
using corral::master::Run;
using corral::master::Runs;
using nlohmann::json;

namespace {

std::shared_ptr<const corral::scenario::Scenario> one_request() {
  auto s = corral::scenario::parse_scenario(json::parse(
      R"({"name": "x", "steps": [{"request": {"url": "http://127.0.0.1:1/"}}]})"));
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

TEST_CASE("runs: a million queued instances hold no record; placing some holds only theirs") {
  Runs runs;
  Run& run = runs.create(one_request(), json::object(), 1000000, 1000);
  CHECK(run.instances.held() == 0);
  CHECK(run.count(InstanceState::kQueued) == 1000000);
  CHECK(run.instance(999999).state == InstanceState::kQueued);
  CHECK(run.instances.held() == 0);  // reading one makes no record

  Dispatcher d(runs, [](int, auto, const json&) { return true; }, /*per_worker_limit=*/1500);
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
  Dispatcher d(runs, [](int, auto, const json&) { return true; }, /*per_worker_limit=*/10);
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
