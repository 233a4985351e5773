// The runs table on a host of a cluster: only claimed ranges are placed, each instance from
// where the journal has it; a host fenced off forgets what it held; a run ended elsewhere ends
// here.
#include <catch2/catch.hpp>

#include "config/scenario/parse.h"
#include "master/runs.h"
#include "tests/unit/master/journal_bench.h"

using corral::master::InstanceState;
using corral::master::Run;
using corral::master::Runs;
using namespace corral::test;  // NOLINT: the journal's rows

namespace {

const char* const kTwoSteps = R"({"name": "two", "steps": [
    {"name": "a", "request": {"url": "http://127.0.0.1:1/a"}},
    {"name": "b", "request": {"url": "http://127.0.0.1:1/b"}}]})";

// A run of 6 instances as the journal holds it after another host ran part of it: 1 passed,
// 2 was running at step 1, 3 waited to resume, 0, 4 and 5 never started.
StoredRun page_of_six() {
  StoredRun page;
  page.run = run_row("r3-cccc", 3);
  page.run.scenario = kTwoSteps;
  page.run.vars = "{}";
  page.run.instances = 6;
  page.instances.push_back(instance("r3-cccc", 1, "passed", 20));
  InstanceRow running = instance("r3-cccc", 2, "running");
  running.next_step = 1;
  running.started_ms = 10;
  running.vars = R"({"id":"j2"})";
  page.instances.push_back(running);
  InstanceRow waiting = instance("r3-cccc", 3, "queued");
  waiting.started_ms = 11;
  page.instances.push_back(waiting);
  page.steps.push_back(step("r3-cccc", 2, 0, "passed"));
  return page;
}

}  // namespace

TEST_CASE("runs (cluster): a resumed instance's resume is written once, when it is placed") {
  AnyDb db;
  db.on("sqlite");
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    corral::master::journal::Journal journal(&loop, std::move(db.store));
    const StoredRun page = page_of_six();
    journal.write([&page](Store& s) { return s.put_run(page.run); });
    for (const auto& row : page.instances) journal.put_instance(row);
    Runs runs;
    runs.set_clustered(true);
    runs.attach(&journal);
    REQUIRE(runs.claimed(page, 0, 6).is_ok());
    journal.flush();
    auto row = [&](int idx) {
      return db.sql(
          "SELECT state || ':' || resumes || ':' || resume_reasons || ':' || started_ms "
          "FROM instances WHERE idx = " +
          std::to_string(idx));
    };
    CHECK(row(2) == "running:0:[]:10");  // the claim wrote nothing: still the lost host's row
    Run* run = runs.find("r3-cccc");
    REQUIRE(run != nullptr);
    runs.mark_running(*run, {0, 2}, 0, 1'000);
    journal.flush();
    CHECK(row(2) == R"(running:1:["host_lost"]:10)");  // its resume and its start, one row
    // The rest of its row is the lost host's, as it was read to resume it.
    CHECK(db.sql("SELECT next_step || ':' || vars FROM instances WHERE idx = 2") ==
          R"(1:{"id":"j2"})");
    CHECK(row(0) == "running:0:[]:1000");              // only its start: never ran before
    CHECK_FALSE(run->instance(2).row_behind);
    CHECK(journal.health().committed == 1 + page.instances.size() + 2);  // the row, the mark
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}

TEST_CASE("runs (cluster): a run submitted here waits for a claim before anything is placed") {
  auto scenario = corral::scenario::parse_scenario(nlohmann::json::parse(kTwoSteps));
  REQUIRE(scenario.is_ok());
  Runs runs;
  runs.set_clustered(true);
  Run& run = runs.create(*scenario, nlohmann::json::object(), 300, 1);
  CHECK(run.clustered);
  CHECK(run.pending() == 0);
  CHECK(run.fresh_count() == 0);
}

TEST_CASE("runs (cluster): a claimed range starts fresh what never started and resumes the rest from the journal") {
  Runs runs;
  runs.set_clustered(true);
  auto waiting = runs.claimed(page_of_six(), 0, 6);
  REQUIRE(waiting.is_ok());
  CHECK(*waiting == 5);
  Run* run = runs.find("r3-cccc");
  REQUIRE(run != nullptr);
  CHECK(run->count(InstanceState::kPassed) == 1);
  CHECK(run->count(InstanceState::kQueued) == 5);
  CHECK(run->pending() == 5);
  CHECK(run->requeued == std::deque<uint32_t>{2, 3});
  CHECK(run->instance(2).next_step == 1);
  CHECK(run->instance(2).detail().vars == nlohmann::json{{"id", "j2"}});
  CHECK(run->instance(2).detail().steps.size() == 1);
  CHECK(run->instance(2).detail().resume_reasons == std::vector<std::string>{"host_lost"});
  CHECK(run->instance(2).crash_resumes == 0);      // a host's death is not the instance's fault
  CHECK(run->instance(3).detail().resume_reasons.empty());  // it was not running anywhere
  // Fresh instances go out as ranges: 0, then 4..5.
  CHECK(run->fresh_first() == 0);
  CHECK(run->fresh_count() == 1);
  run->take_fresh(1);
  CHECK(run->fresh_first() == 4);
  CHECK(run->fresh_count() == 2);
  CHECK(run->claims == std::map<uint32_t, uint32_t>{{0, 6}});
}

TEST_CASE("runs (cluster): claiming again takes the journal's rows over what this host knew") {
  Runs runs;
  runs.set_clustered(true);
  REQUIRE(runs.claimed(page_of_six(), 0, 6).is_ok());
  Run* run = runs.find("r3-cccc");
  runs.mark_running(*run, {0}, 1, 5);
  StoredRun later = page_of_six();
  later.instances.push_back(instance("r3-cccc", 0, "failed", 30));
  runs.drop_claims();
  auto waiting = runs.claimed(later, 0, 6);
  REQUIRE(waiting.is_ok());
  CHECK(*waiting == 4);
  CHECK(run->instance(0).state == InstanceState::kFailed);
  CHECK(run->count(InstanceState::kRunning) == 0);
  CHECK(run->instance(2).detail().steps.size() == 1);  // not twice
}

TEST_CASE("runs (cluster): fenced off, a host forgets every instance it held") {
  Runs runs;
  runs.set_clustered(true);
  REQUIRE(runs.claimed(page_of_six(), 0, 6).is_ok());
  Run* run = runs.find("r3-cccc");
  runs.mark_running(*run, {2, 3}, 0, 5);
  CHECK(runs.drop_claims() == std::vector<std::string>{"r3-cccc"});
  CHECK(run->count(InstanceState::kRunning) == 0);
  CHECK(run->instance(2).worker == -1);
  CHECK(run->pending() == 0);
  CHECK(run->claims.empty());
  CHECK(runs.drop_claims().empty());  // nothing held any more
}

TEST_CASE("runs (cluster): a run that ended on another host ends here as its summary") {
  Runs runs;
  runs.set_clustered(true);
  REQUIRE(runs.claimed(page_of_six(), 0, 6).is_ok());
  RunRow row = page_of_six().run;
  row.finished_ms = 1'700'000'000'900;
  row.summary = R"({"counts": [0, 0, 6, 0, 0, 0]})";
  runs.finished_elsewhere(row);
  Run* run = runs.find("r3-cccc");
  REQUIRE(run != nullptr);
  CHECK(run->finished_ms == row.finished_ms);
  CHECK_FALSE(run->whole);
  CHECK(run->count(InstanceState::kPassed) == 6);
  CHECK(run->pending() == 0);
}

TEST_CASE("runs (cluster): a claimed range past the run's end, or of a finished run, places nothing") {
  Runs runs;
  runs.set_clustered(true);
  StoredRun page = page_of_six();
  CHECK(*runs.claimed(page, 6, 100) == 0);
  page.run.finished_ms = 5;
  Runs other;
  other.set_clustered(true);
  CHECK(*other.claimed(page, 0, 6) == 0);
  CHECK(other.find("r3-cccc") == nullptr);
}

TEST_CASE("runs (cluster): a run submitted on another host is held here, and counted over every host") {
  Runs runs;
  runs.set_clustered(true);
  RunRow row = page_of_six().run;
  Run* run = runs.adopt(row);
  REQUIRE(run != nullptr);
  CHECK(runs.adopt(row) == nullptr);  // held already
  CHECK(run->pending() == 0);         // nothing claimed yet
  runs.set_cluster_counts(*run, {{"running", 2}, {"passed", 1}, {"", 0}});
  nlohmann::json j = runs.summary_json(*run);
  CHECK(j["counts"]["running"] == 2);
  CHECK(j["counts"]["passed"] == 1);
  CHECK(j["counts"]["queued"] == 3);  // no row yet
  CHECK(j["state"] == "running");
  RunRow ended = row;
  ended.id = "r4-dddd";
  ended.finished_ms = 9;
  CHECK(runs.adopt(ended) == nullptr);  // an ended run is not taken up
}

TEST_CASE("runs (cluster): ranges read in one page are claimed each, and one already ended is done") {
  Runs runs;
  runs.set_clustered(true);
  StoredRun page = page_of_six();
  page.instances.push_back(instance("r3-cccc", 0, "passed", 20));  // 0..1 ended
  auto waiting = runs.claimed(page, {{0, 2}, {2, 4}, {4, 6}});
  REQUIRE(waiting.is_ok());
  CHECK(*waiting == 4);
  Run* run = runs.find("r3-cccc");
  REQUIRE(run != nullptr);
  // The first range had nothing left to run: it is done, the two others are held.
  CHECK(run->claims == std::map<uint32_t, uint32_t>{{2, 4}, {4, 6}});
  CHECK(run->requeued == std::deque<uint32_t>{2, 3});
  CHECK(run->fresh_first() == 4);
  CHECK(run->fresh_count() == 2);
  CHECK(run->instance(2).detail().resume_reasons == std::vector<std::string>{"host_lost"});
}
