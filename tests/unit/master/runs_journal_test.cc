// The runs table with its journal: what a restarted master finds, and retention.
#include <catch2/catch.hpp>

#include <deque>
#include <functional>

#include "config/scenario/parse.h"
#include "master/runs.h"
#include "shared/ipc/events.h"
#include "shared/proc.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/master/journal_bench.h"

using corral::Code;
using corral::Result;
using corral::Status;
using corral::master::InstanceRecord;
using corral::master::InstanceState;
using corral::master::Run;
using corral::master::Runs;
using corral::master::RunsOptions;
using corral::master::journal::Journal;
using corral::master::journal::Store;
using corral::master::journal::StoredRun;
using nlohmann::json;

namespace {

// An event as a worker would send it, decoded the way the master decodes it.
corral::ipc::Event event(const nlohmann::json& j) {
  auto e = corral::ipc::event_from_json(j);
  REQUIRE(e.is_ok());
  return *e;
}

}  // namespace

namespace {

std::shared_ptr<const corral::scenario::Scenario> scenario() {
  auto s = corral::scenario::parse_scenario(json::parse(R"({"name": "two", "steps": [
      {"name": "a", "request": {"url": "http://127.0.0.1:1/a"}},
      {"name": "b", "request": {"url": "http://127.0.0.1:1/b"}}]})"));
  INFO(s.status().message());
  REQUIRE(s.is_ok());
  return *s;
}

// An instance in one line: "state@next_step resumes R/crash_resumes started_ms | reasons...".
std::string brief(const InstanceRecord& in) {
  std::string out = std::string(to_string(in.state)) + "@" + std::to_string(in.next_step) +
                    " resumes " + std::to_string(in.resumes) + "/" +
                    std::to_string(in.crash_resumes) + " " + std::to_string(in.started_ms);
  for (const std::string& r : in.detail().resume_reasons) out += " | " + r;
  return out;
}

// A master's home: the journal file, the loop, and the runs table on top; restart() starts
// over from the file as a restarted master does.
struct Home {
  Home() { uv_loop_init(&loop); }
  ~Home() {
    close();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  void open(RunsOptions opts = {}) {
    auto store = corral::master::journal::open_sqlite_store(path);
    INFO(store.status().message());
    REQUIRE(store.is_ok());
    journal = std::make_unique<Journal>(&loop, std::move(*store));
    runs = std::make_unique<Runs>(opts, journal.get());
  }
  void close() {
    runs.reset();
    journal.reset();
    uv_run(&loop, UV_RUN_NOWAIT);
  }
  size_t restart(int64_t now_ms, RunsOptions opts = {}) {
    journal->flush();
    close();
    open(opts);
    auto n = runs->restore(now_ms);
    INFO(n.status().message());
    REQUIRE(n.is_ok());
    return *n;
  }
  // Runs the loop until `done` holds or 10 s pass (a ticking timer keeps the loop alive).
  bool run_until(const std::function<bool()>& done) {
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(
        &tick, [](uv_timer_t*) {}, 1, 1);
    uint64_t deadline = corral::monotonic_ms() + 10000;
    while (!done() && corral::monotonic_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);
    return done();
  }
  Result<StoredRun> read_run(const std::string& id) {
    auto got = std::make_shared<Result<StoredRun>>(Status(Code::kInternal, "not read"));
    bool done = false;
    journal->read([got, id](Store& s) { *got = s.load_run(id); }, [&done] { done = true; });
    REQUIRE(run_until([&done] { return done; }));
    return *got;
  }
  // read_page(), waiting for its callback: instances from..to-1 as the journal has them.
  std::unique_ptr<Run> page(const std::string& id, uint32_t from, uint32_t to) {
    std::unique_ptr<Run> got;
    bool called = false;
    runs->read_page(id, from, to, [&](Runs::Page p) {
      INFO(p.status().message());
      REQUIRE(p.is_ok());
      got = std::move(*p);
      called = true;
    });
    REQUIRE(run_until([&called] { return called; }));
    return got;
  }
  Run& create(uint32_t instances, int64_t now_ms) {
    return runs->create(scenario(), json::object(), instances, now_ms);
  }
  void done(const Run& run, uint32_t i, const std::string& state, int64_t started, int64_t ended) {
    json ev = {{"t", "done"},    {"run", run.id},         {"i", i},
               {"state", state}, {"started_ms", started}, {"ended_ms", ended}};
    if (state != "passed") ev["reason"] = "boom";
    runs->apply(0, event(ev), ended);
  }
  // A run of one instance per outcome, placed on slot 0 at `start`; instance k ends at
  // start + 500 (k + 1).
  std::string finished_run(const std::vector<std::string>& outcomes, int64_t start) {
    Run& run = create(static_cast<uint32_t>(outcomes.size()), start);
    std::vector<uint32_t> all;
    for (uint32_t k = 0; k < outcomes.size(); ++k) all.push_back(k);
    run.next_fresh = run.size;
    runs->mark_running(run, all, 0, start);
    for (uint32_t k = 0; k < outcomes.size(); ++k) {
      done(run, k, outcomes[k], start, start + 500 * (k + 1));
    }
    REQUIRE(run.finished());
    return run.id;
  }

  corral::test::TempDir dir;
  const std::string path = dir.path() + "/journal.db";
  uv_loop_t loop;
  std::unique_ptr<Journal> journal;
  std::unique_ptr<Runs> runs;
};

using Queue = std::deque<uint32_t>;
constexpr auto kQueued = InstanceState::kQueued;

}  // namespace

TEST_CASE("runs journal: a restarted master resumes the dispatched instances of unfinished runs") {
  // Rows are read back a page at a time: in one page, and in pages of 2 (0-1, 2-3, 4).
  const uint32_t page = GENERATE(50000u, 2u);
  Home h;
  h.open();
  Run& run = h.create(5, 1000);
  const std::string id = run.id;
  const uint64_t seq = run.seq;
  run.next_fresh = 3;
  h.runs->mark_running(run, {0, 1, 2}, 0, 1100);
  h.runs->apply(0,
                event({{"t", "step"},
                       {"run", id},
                       {"i", 0},
                       {"step", 0},
                       {"state", "passed"},
                       {"attempts", 1},
                       {"started_ms", 1100},
                       {"ended_ms", 1200},
                       {"status", 201},
                       {"vars", {{"a", "1"}}}}),
                1200);
  h.done(run, 1, "passed", 1100, 1300);

  CHECK(h.restart(2000, RunsOptions{.restore_page = page}) == 2);
  Run* r = h.runs->find(id);
  REQUIRE(r != nullptr);
  CHECK(json{r->seq, r->size, r->created_ms, r->finished_ms, r->whole} ==
        json{seq, 5, 1000, 0, true});
  REQUIRE(r->size == 5);
  auto in = [r](uint32_t i) -> const InstanceRecord& { return r->instance(i); };
  CHECK(brief(in(0)) == "queued@1 resumes 1/0 1100 | master_restart");
  CHECK(in(0).detail().vars == json{{"a", "1"}});
  REQUIRE(in(0).detail().steps.size() == 1);
  const auto& st = in(0).detail().steps[0];
  CHECK(json{st.step, st.state, st.attempts, st.started_ms, st.ended_ms, st.status} ==
        json{0, "passed", 1, 1100, 1200, 201});
  CHECK(brief(in(1)) == "passed@0 resumes 0/0 1100");
  CHECK(in(1).ended_ms == 1300);
  CHECK(brief(in(2)) == "queued@0 resumes 1/0 1100 | master_restart");
  CHECK(brief(in(3)) == "queued@0 resumes 0/0 0");  // never dispatched
  CHECK(brief(in(4)) == "queued@0 resumes 0/0 0");
  CHECK(r->next_fresh == 3);
  CHECK(r->requeued == Queue{0, 2});
  CHECK(r->count(kQueued) == 4);
  CHECK(r->count(InstanceState::kPassed) == 1);
  CHECK(r->pending() == 4);

  // Run numbers continue where they were: ids never start over at r1.
  Run& next = h.create(1, 3000);
  CHECK(next.seq == seq + 1);
  CHECK_THAT(next.id, Catch::StartsWith("r" + std::to_string(seq + 1) + "-"));
  const std::string next_id = next.id;

  // Another restart before anything was placed again counts no second resume.
  CHECK(h.restart(4000) == 2);
  r = h.runs->find(id);
  REQUIRE(r != nullptr);
  CHECK(brief(r->instance(0)) == "queued@1 resumes 1/0 1100 | master_restart");
  CHECK(r->requeued == Queue{0, 2});
  REQUIRE(h.runs->find(next_id) != nullptr);
  CHECK(h.runs->find(next_id)->next_fresh == 0);
  CHECK(h.create(1, 5000).seq == seq + 2);

  // A run's priority comes back with it.
  const std::string weighted =
      h.runs->create(scenario(), json::object(), 2, 5100, /*priority=*/9).id;
  h.restart(6000);
  REQUIRE(h.runs->find(weighted) != nullptr);
  CHECK(h.runs->find(weighted)->priority == 9);
  CHECK(h.runs->find(id)->priority == 1);
}

TEST_CASE("runs journal: failed steps keep the start of their response, up to the run's budget") {
  Home h;
  h.open(RunsOptions{.body_bytes = 10});
  Run& run = h.create(3, 1000);
  const std::string id = run.id;
  run.next_fresh = 3;
  h.runs->mark_running(run, {0, 1, 2}, 0, 1100);
  auto failed = [&](uint32_t i, const std::string& body) {
    h.runs->apply(0,
                  event({{"t", "step"},
                         {"run", id},
                         {"i", i},
                         {"step", 0},
                         {"state", "failed"},
                         {"attempts", 1},
                         {"started_ms", 1100},
                         {"ended_ms", 1200},
                         {"status", 503},
                         {"reason", "expect: status"},
                         {"body", body}}),
                  1200);
  };
  failed(0, "{\"e\":1}");   // 7 bytes
  failed(1, "{\"e\":22}");  // 8 more would pass the budget of 10: not kept
  failed(2, "ok");          // 2 more fit
  auto bodies = [](const Run& r) {
    std::vector<std::string> out;
    for (uint32_t i = 0; i < r.size; ++i) out.push_back(r.instance(i).detail().steps.at(0).body);
    return out;
  };
  using Bodies = std::vector<std::string>;
  CHECK(bodies(run) == Bodies{"{\"e\":1}", "", "ok"});
  CHECK(run.body_bytes == 9);
  CHECK(h.runs->instance_json(run, 0, true)["steps"][0]["body"] == "{\"e\":1}");
  CHECK_FALSE(h.runs->instance_json(run, 1, true)["steps"][0].contains("body"));
  // The journal has what memory has, and a restarted master counts it against the budget.
  h.restart(2000, RunsOptions{.body_bytes = 10});
  Run* back = h.runs->find(id);
  REQUIRE(back != nullptr);
  CHECK(bodies(*back) == Bodies{"{\"e\":1}", "", "ok"});
  CHECK(back->body_bytes == 9);
}

TEST_CASE("runs journal: a step of a parallel branch is recorded and its checkpoint kept, the instance stays at the parallel step") {
  Home h;
  h.open();
  auto par = corral::scenario::parse_scenario(json::parse(R"({"name": "par", "steps": [
      {"parallel": [{"name": "a", "steps": [{"sleep": "1s"}, {"sleep": "1s"}]},
                    {"name": "b", "steps": [{"sleep": "1s"}]}]},
      {"sleep": "1s"}]})"));
  REQUIRE(par.is_ok());
  Run& run = h.runs->create(*par, json::object(), 1, 1000);
  const std::string id = run.id;
  run.next_fresh = 1;
  h.runs->mark_running(run, {0}, 0, 1100);
  json cp = {{"step", 0}, {"step_started_ms", 1100}, {"started_ms", 1100},
             {"branches", {{{"checkpoint", {{"step", 3}, {"vars", {{"x", "1"}}}}}}, nullptr}}};
  h.runs->apply(0,
                event({{"t", "step"}, {"run", id}, {"i", 0}, {"step", 2}, {"state", "passed"},
                       {"started_ms", 1100}, {"ended_ms", 1200}, {"checkpoint", cp}}),
                1200);
  const InstanceRecord& in = run.instance(0);
  CHECK(in.next_step == 0);  // still at the parallel step
  REQUIRE(in.detail().steps.size() == 1);
  CHECK(in.detail().steps[0].step == 2);
  CHECK(in.detail().checkpoint->branches[0]["checkpoint"]["step"] == 3);
  json shown = h.runs->instance_json(run, 0, true);
  CHECK(shown["steps"][0]["branch"] == "a");
  CHECK(shown["branches"] == json::parse(R"([{"name": "a", "state": "running", "step": 3,
      "step_name": "sleep 1s"}, {"name": "b", "state": "waiting"}])"));

  h.restart(2000);  // the journal has both: the step, and where each branch is
  Run* r = h.runs->find(id);
  REQUIRE(r != nullptr);
  CHECK(brief(r->instance(0)) == "queued@0 resumes 1/0 1100 | master_restart");
  CHECK(r->instance(0).detail().checkpoint->branches[0]["checkpoint"]["vars"]["x"] == "1");
  REQUIRE(r->instance(0).detail().steps.size() == 1);
  CHECK(r->instance(0).detail().steps[0].step == 2);
}

TEST_CASE("runs journal: a run over data rows comes back with its data file") {
  Home h;
  h.open();
  json data = {{"path", "/srv/rows.csv"}, {"format", "csv"}, {"index", "/home/data/1.idx"},
               {"columns", {"email"}}, {"rows", 3}, {"skipped", 0}, {"bad", json::array()}};
  const std::string id = h.runs->create(scenario(), json::object(), 3, 1000, 1, nullptr, data).id;
  const std::string plain = h.create(1, 1100).id;
  h.restart(2000);
  REQUIRE(h.runs->find(id) != nullptr);
  CHECK(h.runs->find(id)->data == data);
  CHECK(h.runs->find(plain)->data.is_null());
  CHECK(h.runs->detail_json(*h.runs->find(id))["data"]["path"] == "/srv/rows.csv");
  CHECK_FALSE(h.runs->detail_json(*h.runs->find(id))["data"].contains("index"));
  CHECK_FALSE(h.runs->detail_json(*h.runs->find(plain)).contains("data"));
}

TEST_CASE("runs journal: a cancelled run is restored finished, every unpassed instance cancelled") {
  Home h;
  h.open();
  Run& run = h.create(4, 1000);
  const std::string id = run.id;
  run.next_fresh = 2;
  h.runs->mark_running(run, {0, 1}, 0, 1100);
  h.done(run, 0, "passed", 1100, 1500);
  CHECK(h.runs->cancel(run, 2000) == 3);

  CHECK(h.restart(3000) == 0);
  Run* r = h.runs->find(id);
  REQUIRE(r != nullptr);
  CHECK(r->finished());
  CHECK(std::string(r->state()) == "cancelled");
  CHECK(r->finished_ms == 2000);
  CHECK(r->count(InstanceState::kCancelled) == 3);
  CHECK(r->count(InstanceState::kPassed) == 1);
  CHECK(h.runs->pending() == 0);

  auto whole = h.page(id, 0, 4);  // the instances, as the journal has them
  REQUIRE(whole != nullptr);
  CHECK(whole->size == r->size);
  REQUIRE(whole->size == 4);
  CHECK(brief(whole->instance(0)) == "passed@0 resumes 0/0 1100");
  CHECK(brief(whole->instance(1)) == "cancelled@0 resumes 0/0 1100");
  CHECK(whole->instance(1).ended_ms == 2000);
  CHECK(brief(whole->instance(2)) == "cancelled@0 resumes 0/0 0");  // never dispatched
  CHECK(brief(whole->instance(3)) == "cancelled@0 resumes 0/0 0");
  CHECK(whole->count(InstanceState::kCancelled) == 3);
}

TEST_CASE("runs journal: retention keeps old runs as summaries, then forgets them everywhere") {
  RunsOptions opts{.keep_whole = 1};
  Home h;
  h.open(opts);
  const std::string a = h.finished_run({"passed", "failed"}, 1000);  // ends at 2000
  const std::string b = h.finished_run({"passed"}, 3000);
  const json detail = h.runs->detail_json(*h.runs->find(a));
  CHECK(detail["state"] == "finished");
  CHECK(detail["counts"]["passed"] == 1);
  CHECK(detail["counts"]["failed"] == 1);
  CHECK(detail["duration_ms"] == json{{"p50", 1000}, {"p95", 1000}, {"max", 1000}});
  CHECK(detail["failures"] ==
        json::array({{{"step", 0}, {"step_name", "a"}, {"reason", "boom"}, {"count", 1}}}));

  CHECK(h.runs->prune(4000) == 0);
  Run* old = h.runs->find(a);
  REQUIRE(old != nullptr);
  CHECK_FALSE(old->whole);
  CHECK(old->instances.held() == 0);
  CHECK(old->size == 2);
  CHECK(h.runs->detail_json(*old) == detail);
  CHECK(h.runs->find(b)->whole);
  CHECK(h.runs->find(b)->instances.held() > 0);

  bool called = false;
  h.runs->read_page(a, 0, 2, [&called](Runs::Page) { called = true; });
  CHECK_FALSE(called);  // read from the journal: the callback comes on the loop
  REQUIRE(h.run_until([&called] { return called; }));
  auto back = h.page(a, 0, 2);
  CHECK(back->whole);
  CHECK_FALSE(old->whole);  // the run itself stays a summary
  // A page from the middle: instance 1 alone, as instance 0 of the page.
  auto second = h.page(a, 1, 2);
  REQUIRE(second->size == 1);
  CHECK(brief(second->instance(0)) == "failed@0 resumes 0/0 1000");
  REQUIRE(back->size == 2);
  CHECK(brief(back->instance(0)) == "passed@0 resumes 0/0 1000");
  CHECK(brief(back->instance(1)) == "failed@0 resumes 0/0 1000");
  CHECK(back->instance(1).detail().reason == "boom");
  CHECK(back->instance(1).ended_ms == 2000);
  CHECK(h.runs->detail_json(*back) == detail);

  opts.keep_runs = 1;
  h.runs->set_options(opts);
  CHECK(h.runs->prune(5000) == 1);
  h.journal->flush();
  INFO("journal: " << h.journal->health().error);
  CHECK(h.journal->health().ok);
  CHECK(h.runs->find(a) == nullptr);
  CHECK(h.runs->find(b) != nullptr);
  CHECK(h.runs->all().size() == 1);
  CHECK(h.read_run(a).status().code() == Code::kNotFound);
  CHECK(h.read_run(b).is_ok());
  h.restart(6000, opts);
  CHECK(h.runs->find(a) == nullptr);
  CHECK(h.runs->find(b) != nullptr);
}

TEST_CASE("runs journal: finished runs stay whole only within the instance budget") {
  RunsOptions opts{.keep_whole = 20, .keep_whole_instances = 3};
  Home h;
  h.open(opts);
  const std::string a = h.finished_run({"passed"}, 1000);
  const std::string b = h.finished_run({"passed", "passed"}, 2000);
  const std::string c = h.finished_run({"passed"}, 3000);
  const std::string open = h.create(5, 4000).id;
  CHECK(h.runs->prune(5000) == 0);
  // Newest first: c (1) and b (2) make 3 instances; a would make 4.
  CHECK(h.runs->find(c)->whole);
  CHECK(h.runs->find(b)->whole);
  CHECK_FALSE(h.runs->find(a)->whole);
  CHECK(h.runs->find(a)->instances.held() == 0);
  CHECK(h.runs->find(open)->whole);  // unfinished runs do not count

  // A finished run larger than the whole budget is a summary at once, and so is every older one.
  opts.keep_whole_instances = 1;
  h.runs->set_options(opts);
  h.runs->prune(6000);
  CHECK(h.runs->find(c)->whole);
  CHECK_FALSE(h.runs->find(b)->whole);
  CHECK_FALSE(h.runs->find(a)->whole);
  bool called = false;
  h.runs->read_page(b, 0, 2, [&called](Runs::Page) { called = true; });
  REQUIRE(h.run_until([&called] { return called; }));
  auto back = h.page(b, 0, 2);
  REQUIRE(back->size == 2);
  CHECK(brief(back->instance(1)) == "passed@0 resumes 0/0 2000");  // started with b, at 2000
  CHECK(back->instance(1).ended_ms == 3000);
}

TEST_CASE("runs journal: prune_finished_before forgets only runs that finished before the time") {
  Home h;
  h.open();
  const std::string a = h.finished_run({"passed"}, 1000);  // finished at 1500
  const std::string b = h.finished_run({"passed"}, 2000);  // finished at 2500
  const std::string open = h.create(1, 3000).id;
  CHECK(h.runs->prune_finished_before(2500) == 1);
  CHECK(h.runs->find(a) == nullptr);
  CHECK(h.runs->find(b) != nullptr);
  CHECK(h.runs->find(open) != nullptr);
  CHECK(h.runs->prune_finished_before(1'000'000) == 1);
  CHECK(h.runs->find(b) == nullptr);
  CHECK(h.runs->find(open) != nullptr);

  h.restart(4000);
  REQUIRE(h.runs->all().size() == 1);
  CHECK(h.runs->all().front()->id == open);
}

TEST_CASE("runs journal: a worker's death errors its culprit past max_resumes, requeues others") {
  RunsOptions opts{.max_resumes = 1};
  Home h;
  h.open(opts);
  Run& run = h.create(4, 1000);
  const std::string id = run.id;
  run.next_fresh = 1;
  h.runs->mark_running(run, {0}, 0, 1000);
  CHECK(h.runs->requeue_worker(0, "died", std::nullopt, true) == 1);  // blames every instance
  CHECK(brief(run.instance(0)) == "queued@0 resumes 1/1 1000 | died");
  CHECK(run.requeued == Queue{0});

  run.requeued.pop_front();  // as the dispatcher does when it places them again
  run.next_fresh = 3;
  h.runs->mark_running(run, {0, 1}, 0, 2000);
  h.runs->mark_running(run, {2}, 1, 2000);
  CHECK(h.runs->requeue_worker(0, "died again", std::make_pair(id, 0u)) == 1);
  const std::string poisoned = "its worker died with it 2 times (died again); max_resumes is 1";
  auto check = [&](const Run& r) {
    CHECK(brief(r.instance(0)) == "errored@0 resumes 1/1 1000 | died");
    CHECK(r.instance(0).detail().reason == poisoned);
    CHECK(r.instance(0).ended_ms > 0);
    CHECK(brief(r.instance(1)) == "queued@0 resumes 1/0 2000 | died again");  // not blamed
    CHECK(r.count(InstanceState::kErrored) == 1);
  };
  check(run);
  CHECK(run.instance(0).worker == -1);
  CHECK(run.instance(1).worker == -1);
  CHECK(brief(run.instance(2)) == "running@0 resumes 0/0 2000");  // on another worker
  CHECK(run.instance(2).worker == 1);
  CHECK(run.requeued == Queue{1});

  CHECK(h.restart(10'000, opts) == 2);
  Run* r = h.runs->find(id);
  REQUIRE(r != nullptr);
  check(*r);
  CHECK(brief(r->instance(2)) == "queued@0 resumes 1/0 2000 | master_restart");
  CHECK(brief(r->instance(3)) == "queued@0 resumes 0/0 0");
  CHECK(r->next_fresh == 3);
  CHECK(r->requeued == Queue{1, 2});
  CHECK(h.runs->detail_json(*r)["failures"] ==
        json::array({{{"step", 0}, {"step_name", "a"}, {"reason", poisoned}, {"count", 1}}}));
}

TEST_CASE("runs journal: a run whose workers die three times within the window is quarantined") {
  RunsOptions opts{.quarantine_after = 3, .quarantine_window_ms = 60'000};
  Home h;
  h.open(opts);
  Run& run = h.create(4, 1000);
  const std::string id = run.id;
  run.next_fresh = 2;
  h.runs->mark_running(run, {0, 1}, 0, 1000);
  std::vector<std::string> had;
  CHECK(h.runs->requeue_worker(0, "worker_hung", std::nullopt, false, &had) == 2);
  CHECK(had == std::vector<std::string>{id});
  CHECK(h.runs->requeue_worker(0, "worker_hung", std::nullopt, false, &had) == 0);
  CHECK(had.size() == 1);  // the run is named once per death, and only with instances there

  // Deaths older than the window are forgotten: two old ones and two new ones are not three.
  CHECK(h.runs->worker_died({id}, "worker_hung", 1000).empty());
  CHECK(h.runs->worker_died({id}, "worker_hung", 30'000).empty());
  CHECK(h.runs->worker_died({id}, "worker_hung", 70'000).empty());
  CHECK(run.deaths_ms.size() == 2);
  CHECK(run.quarantine.empty());
  CHECK(std::string(run.state()) == "queued");
  auto quarantined = h.runs->worker_died({id, "r99-none"}, "worker_crash", 71'000);
  REQUIRE(quarantined.size() == 1);
  CHECK(quarantined[0] == &run);
  CHECK(std::string(run.state()) == "quarantined");
  const std::string why =
      "3 workers died while running its instances within 1m (the last: worker_crash); its "
      "instances are not placed until `corral resume " + id + "` (or cancel it)";
  CHECK(run.quarantine == why);
  CHECK(h.runs->detail_json(run)["quarantine"] == json{{"reason", why}, {"deaths", 3}});
  CHECK(h.runs->worker_died({id}, "worker_hung", 72'000).empty());  // once

  // A restart keeps the quarantine: the deaths must not start over.
  h.restart(80'000, opts);
  Run* r = h.runs->find(id);
  REQUIRE(r != nullptr);
  CHECK(r->quarantine == why);
  CHECK(std::string(r->state()) == "quarantined");
  CHECK(h.runs->resume(*r));
  CHECK_FALSE(h.runs->resume(*r));
  CHECK(r->deaths_ms.empty());
  CHECK(std::string(r->state()) == "queued");
  h.restart(90'000, opts);
  REQUIRE(h.runs->find(id) != nullptr);
  CHECK(h.runs->find(id)->quarantine.empty());
}

TEST_CASE("runs journal: quarantine_after 0 never quarantines") {
  RunsOptions opts{.quarantine_after = 0};
  Home h;
  h.open(opts);
  Run& run = h.create(1, 1000);
  for (int i = 0; i < 10; ++i) CHECK(h.runs->worker_died({run.id}, "worker_hung", 1000 + i).empty());
  CHECK(run.quarantine.empty());
}

TEST_CASE("runs journal: an instance whose record the journal refuses ends errored, once") {
  Home h;
  h.open();
  h.journal->set_on_rejected(
      [&](const corral::master::journal::WriteTag& tag, const std::string& error) {
        h.runs->on_journal_rejected(tag, error);
      });
  // No two instances may share a reason: the second "boom" is refused as a wrong write.
  corral::test::sql(h.path,
                    "CREATE UNIQUE INDEX one_reason ON instances (reason) WHERE reason <> ''");
  Run& run = h.create(3, 1000);
  run.next_fresh = 3;
  h.runs->mark_running(run, {0, 1, 2}, 0, 1000);
  h.done(run, 0, "failed", 1000, 1100);
  h.done(run, 1, "failed", 1000, 1200);
  REQUIRE(h.run_until([&] { return run.instance(1).detail().reason != "boom"; }));
  CHECK(to_string(run.instance(1).state) == std::string("errored"));
  CHECK(
      run.instance(1).detail().reason ==
      "the journal rejected its record: put_instance: UNIQUE constraint failed: instances.reason");
  // The others go on: instance 2 still runs and finishes normally.
  CHECK(run.instance(2).state == InstanceState::kRunning);
  h.done(run, 2, "passed", 1000, 1300);
  CHECK(run.finished());
  h.journal->flush();
  CHECK(h.journal->health().rejected_writes == 1);
}

TEST_CASE("runs journal: damaged rows are mended or ended, never thrown about") {
  namespace j = corral::master::journal;
  j::StoredRun s;
  s.run = {"r9-dead",
           9,
           R"({"name":"two","steps":[{"request":{"url":"http://h/a"}},{"sleep":"1s"}]})",
           "[1,2]",
           4,
           1000,
           0,
           false,
           "",
           1,
           "",
           ""};
  auto row = [&](uint32_t idx, const char* state, uint32_t next, const char* reasons,
                 const char* vars, const char* cp) {
    j::InstanceRow r;
    r.run_id = s.run.id, r.idx = idx, r.state = state, r.next_step = next;
    r.resume_reasons = reasons, r.vars = vars, r.checkpoint = cp;
    s.instances.push_back(r);
  };
  row(0, "running", 1, R"(["ok", 3, null])", "[]", R"({"step": "one"})");
  row(1, "running", 7, "not json", "{}", "");
  row(2, "queued", 0, "[]", R"({"x":1})", R"({"step": 5})");
  row(3, "running", 0, "[]", "{}", R"({"step": 1, "attempts": 4})");
  // Times far apart enough to overflow a subtraction (found by fuzz_journal_rows).
  row(4, "failed", 0, "[]", "{}", "");
  s.instances.back().started_ms = INT64_MIN + 1;
  s.instances.back().ended_ms = INT64_MAX;
  using corral::master::run_from_journal;
  auto built = run_from_journal(s, true);
  INFO((built ? "" : built.status().message()));
  REQUIRE(built.is_ok());
  Run& run = **built;
  CHECK(run.vars == json::object());  // run vars that are not an object
  CHECK(run.instance(0).detail().resume_reasons == std::vector<std::string>{"ok"});
  CHECK(run.instance(0).detail().vars.is_null());  // wrong types: dropped
  CHECK_FALSE(run.instance(0).detail().checkpoint);
  CHECK(run.instance(2).detail().vars == json{{"x", 1}});   // an object: kept
  CHECK(run.instance(1).state == InstanceState::kErrored);  // step 7 of a 2-step scenario
  CHECK(run.instance(1).detail().reason ==
        "its record in the journal names step 7, past the scenario's last step");
  CHECK_FALSE(run.instance(2).detail().checkpoint);           // step out of range: dropped
  CHECK(run.instance(3).detail().checkpoint->attempts == 4);  // well-formed: kept

  s.run.instances = 0;
  CHECK_FALSE(run_from_journal(s, true).is_ok());
  s.run.instances = corral::master::kMaxRunInstances + 1;
  CHECK_FALSE(run_from_journal(s, true).is_ok());
  s.run.instances = 5;
  s.run.summary = R"({"counts": ["a", true, -1]})";
  CHECK(run_from_journal(s, false).is_ok());
}
