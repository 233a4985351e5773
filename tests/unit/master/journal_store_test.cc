// The journal: its SQLite store (schema, rows, a full disk) and the writer thread in front of it.
// Writes the store refuses as wrong are in journal_reject_test.cc.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "tests/unit/master/journal_bench.h"

using corral::Code;
using corral::Result;
using corral::Status;
using namespace corral::master::journal;  // NOLINT: the rows, Store and Journal
using namespace corral::test;             // NOLINT: the journal's test bench

namespace {

StoredRun load(Store& s, const std::string& id) {
  auto got = s.load_run(id);
  REQUIRE_OK(got.status());
  return std::move(*got);
}

#define CHECK_SAME(got, ...) CHECK(describe(got) == describe(__VA_ARGS__))

// "state:ended_ms" of each instance row, in order.
std::string states(const StoredRun& r) {
  std::string out;
  for (const auto& in : r.instances) out += " " + in.state + ":" + std::to_string(in.ended_ms);
  return out.substr(1);
}

// A store on a fresh journal file.
struct Db : File {
  std::unique_ptr<Store> store = open_store(path);
};

}  // namespace

TEST_CASE_METHOD(Db, "journal store: a new file gets the current schema") {
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  store.reset();
  for (int open = 0; open < 2; ++open) {  // opening it again changes nothing
    CHECK(sql(path, "SELECT MAX(version) || '/' || COUNT(*) FROM schema_version") == "15/1");
    CHECK(sql(path,
              "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
              "name IN ('runs', 'instances', 'steps', 'meta', 'callbacks', 'schedules', "
              "'schedule_fires', 'load_tests')") == "8");
    CHECK(sql(path, "PRAGMA journal_mode") == "wal");
    store = open_store(path);
    CHECK_SAME(load(*store, "r1-aaaa").run, run_row("r1-aaaa", 1));  // kept what was written
    CHECK(store->next_seq(Store::kRunSeq).value() == 2);
    store.reset();
  }
}

TEST_CASE_METHOD(Db, "journal store: a file of schema 1 gains the steps' url and keeps its rows") {
  REQUIRE_OK(store->put_step(step("r1-aaaa", 0, 0, "passed")));
  store.reset();
  sql(path, "ALTER TABLE steps DROP COLUMN url");  // as version 1 made it
  sql(path, "ALTER TABLE runs DROP COLUMN priority");
  sql(path, "ALTER TABLE runs DROP COLUMN data");
  sql(path, "DROP TABLE callbacks; DROP TABLE schedules; DROP TABLE schedule_fires");
  sql(path, "DROP TABLE hosts; DROP TABLE claims");
  sql(path, "DROP TABLE loads; DROP TABLE load_shares; DROP TABLE load_seconds");
  sql(path, "ALTER TABLE runs DROP COLUMN quarantine");
  sql(path, "ALTER TABLE steps DROP COLUMN tls_us");
  sql(path, "ALTER TABLE steps DROP COLUMN body");
  sql(path, "DROP TABLE load_tests");
  sql(path, "UPDATE schema_version SET version = 1");
  store = open_store(path);
  CHECK(sql(path, "SELECT MAX(version) FROM schema_version") == "15");
  StepRow redirected = step("r1-aaaa", 0, 1, "passed");
  redirected.url = "http://127.0.0.1:1/final";
  REQUIRE_OK(store->put_step(redirected));
  CHECK(sql(path, "SELECT group_concat(seq || ':' || url, ' ') FROM steps") ==
        "0: 1:http://127.0.0.1:1/final");
}

TEST_CASE_METHOD(Db, "journal store: a file of schema 2 gains the runs' priority, 1 for those it has") {
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  store.reset();
  sql(path, "ALTER TABLE runs DROP COLUMN priority");  // as version 2 left it
  sql(path, "ALTER TABLE runs DROP COLUMN data");
  sql(path, "DROP TABLE callbacks; DROP TABLE schedules; DROP TABLE schedule_fires");
  sql(path, "DROP TABLE hosts; DROP TABLE claims");
  sql(path, "DROP TABLE loads; DROP TABLE load_shares; DROP TABLE load_seconds");
  sql(path, "ALTER TABLE runs DROP COLUMN quarantine");
  sql(path, "ALTER TABLE steps DROP COLUMN tls_us");
  sql(path, "ALTER TABLE steps DROP COLUMN body");
  sql(path, "DROP TABLE load_tests");
  sql(path, "UPDATE schema_version SET version = 2");
  store = open_store(path);
  CHECK(sql(path, "SELECT MAX(version) FROM schema_version") == "15");
  CHECK(load(*store, "r1-aaaa").run.priority == 1);
  RunRow weighted = run_row("r2-bbbb", 2);
  weighted.priority = 40;
  REQUIRE_OK(store->put_run(weighted));
  CHECK_SAME(load(*store, "r2-bbbb").run, weighted);
}

TEST_CASE_METHOD(Db, "journal store: a file of schema 5 gains the runs' data file, none for those it has") {
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  store.reset();
  sql(path, "ALTER TABLE runs DROP COLUMN data");  // as version 5 left it
  sql(path, "DROP TABLE hosts; DROP TABLE claims");
  sql(path, "DROP TABLE loads; DROP TABLE load_shares; DROP TABLE load_seconds");
  sql(path, "ALTER TABLE runs DROP COLUMN quarantine");
  sql(path, "ALTER TABLE steps DROP COLUMN tls_us");
  sql(path, "ALTER TABLE steps DROP COLUMN body");
  sql(path, "DROP TABLE load_tests");
  sql(path, "UPDATE schema_version SET version = 5");
  store = open_store(path);
  CHECK(sql(path, "SELECT MAX(version) FROM schema_version") == "15");
  CHECK(load(*store, "r1-aaaa").run.data.empty());
  RunRow over_rows = run_row("r2-bbbb", 2);
  over_rows.data = R"({"path":"/srv/rows.csv"})";
  REQUIRE_OK(store->put_run(over_rows));
  CHECK_SAME(load(*store, "r2-bbbb").run, over_rows);
}

TEST_CASE_METHOD(AnyDb, "journal store: callbacks round-trip by page, once each, and go with their run") {
  EACH_STORE();
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  for (uint32_t idx : {0u, 3u, 5u}) {
    REQUIRE_OK(store->put_callback({"r1-aaaa", idx, 2, R"({"i":)" + std::to_string(idx) + "}", 7}));
  }
  REQUIRE_OK(store->put_callback({"r1-aaaa", 3, 2, R"({"again":true})", 9}));  // kept: the first
  REQUIRE_OK(store->put_callback({"r1-aaaa", 3, 4, "null", 8}));
  auto page = store->load_run_page("r1-aaaa", 1, 5);
  REQUIRE_OK(page.status());
  std::string got;
  for (const CallbackRow& c : page->callbacks) {
    got += join(c.run_id, c.idx, c.step, c.body, c.received_ms) + "\n";
  }
  CHECK(got == join("r1-aaaa", 3, 2, R"({"i":3})", 7) + "\n" + join("r1-aaaa", 3, 4, "null", 8) + "\n");
  CHECK(load(*store, "r1-aaaa").callbacks.size() == 4);
  REQUIRE_OK(store->delete_run("r1-aaaa"));
  CHECK(sql("SELECT COUNT(*) FROM callbacks") == "0");
}

TEST_CASE_METHOD(AnyDb, "journal store: a newer schema version is refused, naming path and version") {
  EACH_STORE();
  store.reset();
  sql("UPDATE schema_version SET version = 16");
  auto again = open_again();
  REQUIRE_FALSE(again.is_ok());
  CHECK(again.status().code() == Code::kInvalidArgument);
  CHECK_THAT(again.status().message(), Catch::Contains("the journal " + where()) &&
                                           Catch::Contains("schema version 16, newer"));
  CHECK(sql("SELECT MAX(version) FROM schema_version") == "16");
}

TEST_CASE_METHOD(AnyDb, "journal store: run, instance and step rows round-trip exactly") {
  EACH_STORE();
  RunRow run = run_row("r9-beef", 9);
  run.finished_ms = 1'700'000'500'000;
  run.cancelled = true;
  run.priority = 7;
  run.summary = R"({"counts":[0,0,1,1,0,3],"failures":[{"reason":"bad \"x\""}]})";
  InstanceRow a = instance(run.id, 3, "failed", 1'700'000'000'900);  // every field set
  a.next_step = 2, a.started_ms = 1'700'000'000'100, a.reason = "≠ 200", a.resumes = 4;
  a.crash_resumes = 2, a.resume_reasons = R"(["died","restart"])", a.vars = R"({"l":[1]})";
  a.checkpoint = R"({"step":2,"x":[]})";
  const InstanceRow b = instance(run.id, 1, "passed", 5);  // stored after a, loaded before it
  StepRow s1 = step(run.id, 3, 1, "failed");
  s1.step = 2, s1.attempts = 5, s1.status = 503, s1.until_ms = 600, s1.reason = "status 503";
  s1.started_ms = 1'700'000'000'200, s1.ended_ms = 1'700'000'000'800;
  s1.url = "http://127.0.0.1:1/final";
  s1.tls_us = 2345;
  s1.body = "{\"error\": \"quota \u00e9\"}\n\xE2\x80\xA6";
  const StepRow s0 = step(run.id, 3, 0, "passed"), s_other = step(run.id, 1, 0, "passed");
  REQUIRE_OK(store->begin());
  REQUIRE_OK(store->put_run(run));
  for (const InstanceRow& r : {a, b}) REQUIRE_OK(store->put_instance(r));
  for (const StepRow& s : {s1, s0, s_other}) REQUIRE_OK(store->put_step(s));
  REQUIRE_OK(store->commit());
  StoredRun got = load(*store, run.id);
  CHECK_SAME(got.run, run);
  CHECK_SAME(got.instances, std::vector<InstanceRow>{b, a});
  CHECK_SAME(got.steps, std::vector<StepRow>{s_other, s0, s1});  // by idx, then seq
  auto missing = store->load_run("r404-0000");
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("r404-0000"));
}

TEST_CASE_METHOD(AnyDb, "journal store: upserts: mark_running keeps a start, put_step writes once") {
  EACH_STORE();
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  InstanceRow before = instance("r1-aaaa", 1, "queued");
  before.next_step = 2, before.started_ms = 3000, before.resumes = 1, before.vars = R"({"a":"1"})";
  before.resume_reasons = R"(["handed_back"])", before.checkpoint = R"({"step":2})";
  REQUIRE_OK(store->put_instance(before));
  REQUIRE_OK(store->mark_running("r1-aaaa", {0, 1, 4}, 9000));
  InstanceRow fresh0 = instance("r1-aaaa", 0, "running"), fresh4 = fresh0;
  fresh4.idx = 4;
  fresh0.started_ms = fresh4.started_ms = 9000;
  InstanceRow resumed = before;  // running, same start, its checkpoint used up
  resumed.state = "running", resumed.checkpoint = "";
  CHECK_SAME(load(*store, "r1-aaaa").instances, std::vector<InstanceRow>{fresh0, resumed, fresh4});
  const StepRow first{"r1-aaaa", 0, 0, 0, "passed", 1, 100, 200, 200, -1, "", "", 0, ""};
  REQUIRE_OK(store->put_step(first));
  // A second record of the same step changes nothing.
  REQUIRE_OK(
      store->put_step({"r1-aaaa", 0, 0, 0, "failed", 9, 300, 400, 500, 7, "x", "u", 0, "b"}));
  const InstanceRow last{"r1-aaaa", 1, "passed", 3, 3000, 777, "", 1, 0, R"(["x"])", "{}", ""};
  REQUIRE_OK(store->put_instance(last));
  StoredRun got = load(*store, "r1-aaaa");
  CHECK_SAME(got.steps, std::vector<StepRow>{first});
  CHECK_SAME(got.instances, std::vector<InstanceRow>{fresh0, last, fresh4});
}

TEST_CASE_METHOD(AnyDb,
                 "journal store: mark_resumed counts a resume and keeps the rest of the row") {
  EACH_STORE();
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  InstanceRow lost = instance("r1-aaaa", 1, "running");
  lost.next_step = 1, lost.started_ms = 3000, lost.resumes = 1, lost.vars = R"({"id":"j-1"})";
  lost.resume_reasons = R"(["crash"])", lost.checkpoint = R"({"step":1})";
  REQUIRE_OK(store->put_instance(lost));
  // Instance 1 twice in one call (the last one counts); 2 has no row yet.
  REQUIRE_OK(store->mark_resumed(
      "r1-aaaa",
      {{1, 9, R"(["x"])"}, {2, 1, R"(["host_lost"])"}, {1, 2, R"(["crash","host_lost"])"}}));
  REQUIRE_OK(store->mark_resumed("r1-aaaa", {}));
  InstanceRow resumed = lost;
  resumed.resumes = 2, resumed.resume_reasons = R"(["crash","host_lost"])";
  InstanceRow fresh = instance("r1-aaaa", 2, "running");
  fresh.resumes = 1, fresh.resume_reasons = R"(["host_lost"])";
  CHECK_SAME(load(*store, "r1-aaaa").instances, std::vector<InstanceRow>{resumed, fresh});
}

TEST_CASE_METHOD(AnyDb, "journal store: finish_run cancels open instances only for a cancelled run") {
  EACH_STORE();
  for (const std::string id : {"r1-aaaa", "r2-bbbb"}) {
    REQUIRE_OK(store->put_run(run_row(id, id == "r1-aaaa" ? 1 : 2)));
    REQUIRE_OK(store->put_instance(instance(id, 0, "queued")));
    REQUIRE_OK(store->put_instance(instance(id, 1, "running")));
    REQUIRE_OK(store->put_instance(instance(id, 2, "passed", 4000)));
    REQUIRE_OK(store->put_instance(instance(id, 3, "failed", 4500)));
  }
  RunRow r1 = run_row("r1-aaaa", 1), r2 = run_row("r2-bbbb", 2);
  r1.finished_ms = 7000, r1.cancelled = true, r1.summary = R"({"counts":[0,0,1,1,0,2]})";
  r2.finished_ms = 8000, r2.summary = R"({"counts":[1,1,1,1,0,0]})";
  REQUIRE_OK(store->finish_run(r1.id, 7000, true, r1.summary));
  REQUIRE_OK(store->finish_run(r2.id, 8000, false, r2.summary));
  CHECK(states(load(*store, r1.id)) == "cancelled:7000 cancelled:7000 passed:4000 failed:4500");
  CHECK(states(load(*store, r2.id)) == "queued:0 running:0 passed:4000 failed:4500");
  CHECK_SAME(store->runs().value(), std::vector<RunRow>{r1, r2});
}

TEST_CASE_METHOD(AnyDb,
                 "journal store: the run number never goes back, and delete_run forgets a run") {
  EACH_STORE();
  CHECK(store->next_seq(Store::kRunSeq).value() == 1);
  REQUIRE_OK(store->put_run(run_row("r3-cccc", 3)));
  CHECK(store->next_seq(Store::kRunSeq).value() == 4);
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));  // an older number does not lower it
  CHECK(store->next_seq(Store::kRunSeq).value() == 4);
  REQUIRE_OK(store->put_run(run_row("r5-eeee", 5)));
  REQUIRE_OK(store->put_instance(instance("r5-eeee", 0, "running")));
  REQUIRE_OK(store->put_step(step("r5-eeee", 0, 0, "passed")));
  REQUIRE_OK(store->put_instance(instance("r3-cccc", 0, "passed")));
  CHECK(store->next_seq(Store::kRunSeq).value() == 6);
  REQUIRE_OK(store->begin());  // in one transaction, as the journal's thread runs every write
  REQUIRE_OK(store->delete_run("r5-eeee"));
  Status reclaimed = store->reclaim();
  CHECK(reclaimed.message() == "");
  REQUIRE_OK(store->commit());
  CHECK(store->next_seq(Store::kRunSeq).value() == 6);
  CHECK(store->load_run("r5-eeee").status().code() == Code::kNotFound);
  CHECK(load(*store, "r3-cccc").instances.size() == 1);  // other runs keep their rows
  std::string ids;
  auto runs = store->runs();
  for (const RunRow& r : runs.value()) ids += r.id + " ";
  CHECK(ids == "r1-aaaa r3-cccc ");  // lowest number first
  store.reset();
  CHECK(sql("SELECT (SELECT COUNT(*) FROM instances WHERE run_id = 'r5-eeee') || '/' || "
            "(SELECT COUNT(*) FROM steps WHERE run_id = 'r5-eeee')") == "0/0");
  CHECK(reopen()->next_seq(Store::kRunSeq).value() == 6);  // across a reopen too
}

TEST_CASE_METHOD(AnyDb, "journal store: the load test number has its own counter, never lowered") {
  EACH_STORE();
  CHECK(store->next_seq(Store::kLoadSeq).value() == 1);
  REQUIRE_OK(store->bump_seq(Store::kLoadSeq, 3));
  REQUIRE_OK(store->bump_seq(Store::kLoadSeq, 2));  // a lower number changes nothing
  CHECK(store->next_seq(Store::kLoadSeq).value() == 3);
  REQUIRE_OK(store->put_run(run_row("r7-aaaa", 7)));
  CHECK(store->next_seq(Store::kLoadSeq).value() == 3);  // runs count apart
  CHECK(store->next_seq(Store::kRunSeq).value() == 8);
  CHECK(reopen()->next_seq(Store::kLoadSeq).value() == 3);
}

TEST_CASE_METHOD(Db, "journal store: a file at its page limit fails writes as on a full disk") {
  store = open_store(path, 16);
  Status failed;
  REQUIRE_OK(store->begin());
  for (uint32_t i = 0; i < 2000 && failed.is_ok(); ++i) {
    InstanceRow row = instance("r1-aaaa", i, "passed");
    row.reason = std::string(1000, 'x');
    failed = store->put_instance(row);
  }
  if (failed.is_ok()) failed = store->commit();
  store->rollback();
  CHECK(failed.code() == Code::kIo);
  CHECK_FALSE(is_bad_write(failed));  // the disk's fault: the same write is to be tried again
  CHECK_THAT(failed.message(), Catch::Contains("journal " + path) && Catch::Contains("full"));
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));  // small writes still fit afterwards
  CHECK(load(*store, "r1-aaaa").instances.empty());
}

TEST_CASE_METHOD(AnyDb, "journal store: a violated constraint is the write's fault, named as such") {
  EACH_STORE();
  sql("CREATE UNIQUE INDEX one_reason ON instances (reason) WHERE reason <> ''");
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  InstanceRow a = instance("r1-aaaa", 0, "failed"), b = instance("r1-aaaa", 1, "failed");
  a.reason = b.reason = "timeout";
  REQUIRE_OK(store->put_instance(a));
  Status s = store->put_instance(b);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(is_bad_write(s));
  CHECK(s.message() == (postgres() ? "put_instance: duplicate key value violates unique "
                                     "constraint \"one_reason\""
                                   : "put_instance: UNIQUE constraint failed: instances.reason"));
  b.reason = "refused";
  REQUIRE_OK(store->put_instance(b));  // the statement is ready for the next write
  CHECK(states(load(*store, "r1-aaaa")) == "failed:0 failed:0");
}

TEST_CASE_METHOD(AnyDb, "journal store: rolling back a savepoint undoes only the write after it") {
  EACH_STORE();
  REQUIRE_OK(store->begin());
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  REQUIRE_OK(store->savepoint());
  REQUIRE_OK(store->put_instance(instance("r1-aaaa", 0, "running")));
  REQUIRE_OK(store->put_step(step("r1-aaaa", 0, 0, "passed")));
  REQUIRE_OK(store->rollback_savepoint());
  REQUIRE_OK(store->savepoint());
  REQUIRE_OK(store->put_instance(instance("r1-aaaa", 1, "running")));
  REQUIRE_OK(store->release_savepoint());
  REQUIRE_OK(store->commit());
  StoredRun got = load(*store, "r1-aaaa");
  CHECK(join(got.instances.size(), got.instances.at(0).idx, got.steps.size()) == join(1, 1, 0));
}

TEST_CASE("journal: writes commit in order and a read queued after them sees them") {
  Bench b;
  b.write_run("r1-aaaa", 1, 1);
  for (uint32_t k = 1; k <= 50; ++k) {  // the last one wins only when applied in order
    InstanceRow row = instance("r1-aaaa", 0, "running");
    row.next_step = k;
    b.write(row);
  }
  const auto loop_thread = std::this_thread::get_id();
  std::thread::id done_on;
  Result<StoredRun> seen = Status(Code::kInternal, "not read");
  b.journal->read([&](Store& s) { seen = s.load_run("r1-aaaa"); },
                  [&] { done_on = std::this_thread::get_id(); });
  b.journal->flush();  // the read has run; its `done` waits for the loop
  CHECK(done_on == std::thread::id());
  REQUIRE(b.run_until([&] { return done_on != std::thread::id(); }));
  CHECK(done_on == loop_thread);
  REQUIRE(seen.is_ok());
  REQUIRE(seen->instances.size() == 1);
  CHECK(join(seen->instances[0].next_step, seen->steps.size()) == join(50, 1));
  auto h = b.journal->health();
  CHECK(join(h.ok, h.committed, h.queued, h.failed_batches) == join(true, 53, 0, 0));
}

TEST_CASE("journal: rows queued together commit in order with the writes and reads around") {
  // 2,500 rows: more than one entry of the queue carries.
  Bench b({.commit_window_ms = 20});
  b.write_run("r1-aaaa", 2, 0);
  auto row_at = [](uint32_t idx, uint32_t k) {
    InstanceRow row = instance("r1-aaaa", idx, "running");
    row.next_step = k;
    return row;
  };
  for (uint32_t k = 1; k <= 2500; ++k) b.journal->put_instance(row_at(k % 2, k));
  Result<StoredRun> seen = Status(Code::kInternal, "not read");
  b.journal->read([&](Store& s) { seen = s.load_run("r1-aaaa"); }, nullptr);
  b.write(step("r1-aaaa", 0, 0, "passed"));
  for (uint32_t k = 2501; k <= 2600; ++k) b.journal->put_instance(row_at(k % 2, k));
  b.write(row_at(0, 7));  // an op after the rows: the last word on instance 0
  b.journal->flush();
  REQUIRE(seen.is_ok());
  REQUIRE(seen->instances.size() == 2);
  CHECK(join(seen->instances[0].next_step, seen->instances[1].next_step, seen->steps.size()) ==
        join(2500, 2499, 0));
  CHECK(sql(b.path, "SELECT group_concat(next_step, ' ') FROM instances ORDER BY idx") == "7 2599");
  CHECK(b.rows() == "1/2/1");
  auto h = b.journal->health();
  CHECK(join(h.ok, h.committed, h.queued) == join(true, 3 + 2600 + 2, 0));
}

TEST_CASE("journal: a failing batch is kept and retried until it commits") {
  Bench b({.retry_ms = 20}, Bench::Flaky{});
  b.write_run("r1-aaaa", 2, 0);
  b.journal->flush();
  auto h = b.journal->health();
  CHECK(join(h.ok, h.error, h.queued, h.committed) == join(false, kFull, 3, 0));
  CHECK(h.failed_batches >= 1);
  CHECK(h.failing_since_ms > 0);
  CHECK(b.rows() == "0/0/0");  // rolled back
  b.write(step("r1-aaaa", 0, 0, "passed"));
  b.write(step("r1-aaaa", 1, 0, "passed"));
  CHECK(b.journal->health().queued == 5);
  b.faults->failing = false;
  REQUIRE(wait_for([&] { return b.journal->health().queued == 0; },
                   [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }));
  h = b.journal->health();
  CHECK(join(h.ok, h.error, h.failing_since_ms, h.committed) == join(true, "", 0, 5));
  CHECK(h.failed_batches == b.faults->failed);
  CHECK(b.rows() == "1/2/2");
}

TEST_CASE("journal: a committed read waits while the store fails and then sees the writes before it, where a read does not wait") {
  Bench b({.retry_ms = 20}, Bench::Flaky{});
  b.write_run("r1-aaaa", 2, 0);
  // What a read saw, handed to the loop's thread by its `done`.
  auto ask = [&](bool committed_only, std::string& out, std::function<std::string(Store&)> fn) {
    auto got = std::make_shared<std::string>();
    auto read = [got, fn](Store& s) { *got = fn(s); };
    auto done = [got, &out] { out = *got; };
    committed_only ? b.journal->read_committed(read, done) : b.journal->read(read, done);
  };
  auto found = [](Store& s) { return s.load_run("r1-aaaa").is_ok() ? "found" : "absent"; };
  std::string tried, committed;
  ask(true, committed, found);
  ask(false, tried, found);
  REQUIRE(b.run_until([&] { return !tried.empty() && b.faults->failed >= 3; }));
  CHECK(tried == "absent");   // answered at once, without the writes kept for a retry
  CHECK(committed.empty());  // still waiting, three retries later
  b.faults->failing = false;
  REQUIRE(b.run_until([&] { return !committed.empty(); }));
  CHECK(committed == "found");
  // With nothing failing, it runs as soon as the writes before it commit.
  std::string next;
  b.write(instance("r1-aaaa", 1, "passed", 5));
  ask(true, next, [](Store& s) { return s.load_run("r1-aaaa")->instances.at(1).state; });
  REQUIRE(b.run_until([&] { return !next.empty(); }));
  CHECK(next == "passed");
}

TEST_CASE("journal: destroying it commits the writes still queued") {
  Bench b({.commit_window_ms = 60000});  // nothing commits before the destructor
  b.write_run("r1-aaaa", 2, 1);
  CHECK(join(b.journal->health().queued, b.journal->health().committed) == join(4, 0));
  CHECK(b.rows() == "0/0/0");
  b.journal.reset();
  CHECK(b.rows() == "1/2/1");
}

TEST_CASE("journal: writes queued while the writer gathers its batch commit with nothing after") {
  // The writer is woken by the first write into an empty queue and by a full batch only: the
  // writes in between must still reach the store without a read or a flush behind them.
  Bench b({.commit_window_ms = 20});
  b.write_run("r1-aaaa", 3, 0);
  for (uint32_t k = 1; k <= 200; ++k) {
    InstanceRow row = instance("r1-aaaa", k % 3, "running");
    row.next_step = k;
    b.write(row);
  }
  REQUIRE(wait_for([&] { return b.journal->health().queued == 0; },
                   [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }));
  CHECK(b.journal->health().committed == 204);
  CHECK(b.rows() == "1/3/0");
}

namespace {
// The nice value of this process's thread named `name` (/proc/self/task), or nullopt.
std::optional<int> nice_of_thread(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string got;
    std::getline(comm, got);
    if (got != name) continue;
    std::ifstream stat(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
    std::string field;
    for (int k = 3; k <= 19 && fields >> field; ++k) {  // field 19 is the nice value
    }
    return std::stoi(field);
  }
  return std::nullopt;
}
}  // namespace

TEST_CASE("journal: its writer thread is named and runs 5 nicer than the thread that made it") {
  errno = 0;
  const int loop_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  REQUIRE(errno == 0);
  Bench b;
  b.journal->flush();  // the writer has started and set itself up
  CHECK(nice_of_thread("corral-journal") == std::min(19, loop_nice + 5));
}
