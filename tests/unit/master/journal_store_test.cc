// The journal's SQLite store: schema, rows, and the full-disk failure it reports.
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "master/journal/store.h"
#include "tests/support/temp_dir.h"

using corral::Code;
using corral::master::journal::InstanceRow;
using corral::master::journal::open_sqlite_store;
using corral::master::journal::RunRow;
using corral::master::journal::StepRow;
using corral::master::journal::Store;
using corral::master::journal::StoredRun;
using corral::test::TempDir;

namespace {

std::unique_ptr<Store> open_store(const std::string& path, int64_t max_pages = 0) {
  auto store = open_sqlite_store(path, max_pages);
  INFO(store.status().message());
  REQUIRE(store.is_ok());
  return std::move(*store);
}

// The first column of the first row of `sql`, read with sqlite3 itself ("" when no row).
std::string query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  INFO(sqlite3_errmsg(db));
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

void exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* msg = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  INFO((msg ? msg : ""));
  sqlite3_free(msg);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

RunRow run_row(const std::string& id, uint64_t seq) {
  RunRow r;
  r.id = id;
  r.seq = seq;
  r.scenario = R"({"name":"s","steps":[{"name":"a","request":{"url":"http://127.0.0.1:1/x"}}]})";
  r.vars = R"({"base":"http://h","n":"ü \"q\""})";
  r.instances = 5;
  r.created_ms = 1'700'000'000'001;
  return r;
}

InstanceRow instance(const std::string& run, uint32_t idx, const std::string& state) {
  InstanceRow r;
  r.run_id = run;
  r.idx = idx;
  r.state = state;
  return r;
}

StepRow step(const std::string& run, uint32_t idx, uint32_t seq, const std::string& state) {
  StepRow r;
  r.run_id = run;
  r.idx = idx;
  r.seq = seq;
  r.step = seq;
  r.state = state;
  return r;
}

StoredRun load(Store& s, const std::string& id) {
  auto got = s.load_run(id);
  INFO(got.status().message());
  REQUIRE(got.is_ok());
  return std::move(*got);
}

void ok(const corral::Status& s) {
  INFO(s.message());
  REQUIRE(s.is_ok());
}

// Every field, so that one CHECK compares whole rows and shows both on failure.
std::string describe(const RunRow& r) {
  return r.id + "|" + std::to_string(r.seq) + "|" + r.scenario + "|" + r.vars + "|" +
         std::to_string(r.instances) + "|" + std::to_string(r.created_ms) + "|" +
         std::to_string(r.finished_ms) + "|" + std::to_string(r.cancelled) + "|" + r.summary;
}
std::string describe(const InstanceRow& r) {
  return r.run_id + "|" + std::to_string(r.idx) + "|" + r.state + "|" +
         std::to_string(r.next_step) + "|" + std::to_string(r.started_ms) + "|" +
         std::to_string(r.ended_ms) + "|" + r.reason + "|" + std::to_string(r.resumes) + "|" +
         std::to_string(r.crash_resumes) + "|" + r.resume_reasons + "|" + r.vars + "|" +
         r.checkpoint;
}
std::string describe(const StepRow& r) {
  return r.run_id + "|" + std::to_string(r.idx) + "|" + std::to_string(r.seq) + "|" +
         std::to_string(r.step) + "|" + r.state + "|" + std::to_string(r.attempts) + "|" +
         std::to_string(r.started_ms) + "|" + std::to_string(r.ended_ms) + "|" +
         std::to_string(r.status) + "|" + std::to_string(r.until_ms) + "|" + r.reason;
}
template <typename Row>
void check_same(const Row& got, const Row& want) {
  CHECK(describe(got) == describe(want));
}

}  // namespace

TEST_CASE("journal store: a new file gets the current schema") {
  TempDir dir;
  const std::string path = dir.path() + "/journal.db";
  {
    auto store = open_store(path);
    ok(store->put_run(run_row("r1-aaaa", 1)));
  }
  CHECK(query(path, "SELECT MAX(version) FROM schema_version") == "1");
  CHECK(query(path, "SELECT COUNT(*) FROM schema_version") == "1");
  CHECK(query(path,
              "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
              "name IN ('runs', 'instances', 'steps', 'meta')") == "4");
  CHECK(query(path, "PRAGMA journal_mode") == "wal");

  SECTION("and opening it again keeps the data written before") {
    auto store = open_store(path);
    StoredRun got = load(*store, "r1-aaaa");
    check_same(got.run, run_row("r1-aaaa", 1));
    auto runs = store->runs();
    REQUIRE(runs.is_ok());
    CHECK(runs->size() == 1);
    auto seq = store->next_run_seq();
    REQUIRE(seq.is_ok());
    CHECK(*seq == 2);
    CHECK(query(path, "SELECT MAX(version) FROM schema_version") == "1");
  }
}

TEST_CASE("journal store: a file with a newer schema version is refused, naming path and version") {
  TempDir dir;
  const std::string path = dir.path() + "/journal.db";
  exec(path, "CREATE TABLE schema_version (version INTEGER NOT NULL);"
             "INSERT INTO schema_version (version) VALUES (7);");
  auto store = open_sqlite_store(path);
  REQUIRE_FALSE(store.is_ok());
  CHECK(store.status().code() == Code::kInvalidArgument);
  const std::string& msg = store.status().message();
  CHECK_THAT(msg, Catch::Contains(path));
  CHECK_THAT(msg, Catch::Contains("schema version 7"));
  CHECK_THAT(msg, Catch::Contains("newer"));
  // Refused means untouched.
  CHECK(query(path, "SELECT MAX(version) FROM schema_version") == "7");
  CHECK(query(path, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'runs'") == "0");
}

TEST_CASE("journal store: run, instance and step rows round-trip exactly") {
  TempDir dir;
  auto store = open_store(dir.path() + "/journal.db");
  RunRow run = run_row("r9-beef", 9);
  run.finished_ms = 1'700'000'500'000;
  run.cancelled = true;
  run.summary = R"({"counts":[0,0,1,1,0,3],"failures":[{"reason":"bad \"x\""}]})";

  InstanceRow a = instance(run.id, 3, "failed");
  a.next_step = 2;
  a.started_ms = 1'700'000'000'100;
  a.ended_ms = 1'700'000'000'900;
  a.reason = "steps[2]: status 503 ≠ 200";
  a.resumes = 4;
  a.crash_resumes = 2;
  a.resume_reasons = R"(["worker_died","master_restart"])";
  a.vars = R"({"job":"7","list":[1,2]})";
  a.checkpoint = R"({"step":2,"attempts":3,"vars":{"job":"7"}})";
  InstanceRow b = instance(run.id, 1, "passed");  // stored after a, loaded before it
  b.next_step = 3;

  StepRow s1 = step(run.id, 3, 1, "failed");
  s1.step = 2;
  s1.attempts = 5;
  s1.started_ms = 1'700'000'000'200;
  s1.ended_ms = 1'700'000'000'800;
  s1.status = 503;
  s1.until_ms = 600;
  s1.reason = "status 503";
  StepRow s0 = step(run.id, 3, 0, "passed");
  StepRow s_other = step(run.id, 1, 0, "passed");

  ok(store->begin());
  ok(store->put_run(run));
  ok(store->put_instance(a));
  ok(store->put_instance(b));
  for (const StepRow& s : {s1, s0, s_other}) ok(store->put_step(s));
  ok(store->commit());

  StoredRun got = load(*store, run.id);
  check_same(got.run, run);
  REQUIRE(got.instances.size() == 2);
  check_same(got.instances[0], b);
  check_same(got.instances[1], a);
  REQUIRE(got.steps.size() == 3);  // by idx, then seq
  check_same(got.steps[0], s_other);
  check_same(got.steps[1], s0);
  check_same(got.steps[2], s1);

  auto missing = store->load_run("r404-0000");
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("r404-0000"));
}

TEST_CASE("journal store: mark_running inserts running rows and keeps an existing start") {
  TempDir dir;
  auto store = open_store(dir.path() + "/journal.db");
  ok(store->put_run(run_row("r1-aaaa", 1)));
  InstanceRow before = instance("r1-aaaa", 1, "queued");
  before.next_step = 2;
  before.started_ms = 3000;
  before.resumes = 1;
  before.resume_reasons = R"(["handed_back"])";
  before.vars = R"({"a":"1"})";
  before.checkpoint = R"({"step":2,"attempts":1})";
  ok(store->put_instance(before));

  ok(store->mark_running("r1-aaaa", {0, 1, 4}, 9000));
  StoredRun got = load(*store, "r1-aaaa");
  REQUIRE(got.instances.size() == 3);

  InstanceRow fresh = instance("r1-aaaa", 0, "running");
  fresh.started_ms = 9000;
  check_same(got.instances[0], fresh);
  fresh.idx = 4;
  check_same(got.instances[2], fresh);

  InstanceRow resumed = before;
  resumed.state = "running";
  resumed.checkpoint = "";  // the placement used it
  check_same(got.instances[1], resumed);
  CHECK(got.instances[1].started_ms == 3000);
}

TEST_CASE("journal store: a step is written once per position, an instance row is replaced") {
  TempDir dir;
  auto store = open_store(dir.path() + "/journal.db");
  ok(store->put_run(run_row("r1-aaaa", 1)));
  StepRow first = step("r1-aaaa", 0, 0, "passed");
  first.attempts = 1;
  StepRow again = first;
  again.state = "failed";
  again.attempts = 9;
  ok(store->put_step(first));
  ok(store->put_step(again));  // a retried batch: no-op

  InstanceRow one = instance("r1-aaaa", 0, "running");
  one.checkpoint = R"({"step":1})";
  InstanceRow two = instance("r1-aaaa", 0, "passed");
  two.next_step = 1;
  two.ended_ms = 777;
  two.vars = R"({"x":"y"})";
  ok(store->put_instance(one));
  ok(store->put_instance(two));

  StoredRun got = load(*store, "r1-aaaa");
  REQUIRE(got.steps.size() == 1);
  check_same(got.steps[0], first);
  REQUIRE(got.instances.size() == 1);
  check_same(got.instances[0], two);
}

TEST_CASE("journal store: finish_run cancels open instances only when the run was cancelled") {
  TempDir dir;
  auto store = open_store(dir.path() + "/journal.db");
  for (const char* id : {"r1-aaaa", "r2-bbbb"}) {
    ok(store->put_run(run_row(id, id[1] - '0')));
    ok(store->put_instance(instance(id, 0, "queued")));
    ok(store->put_instance(instance(id, 1, "running")));
    InstanceRow passed = instance(id, 2, "passed");
    passed.ended_ms = 4000;
    ok(store->put_instance(passed));
    InstanceRow failed = instance(id, 3, "failed");
    failed.ended_ms = 4500;
    ok(store->put_instance(failed));
  }
  ok(store->finish_run("r1-aaaa", 7000, true, R"({"counts":[0,0,1,1,0,2]})"));
  ok(store->finish_run("r2-bbbb", 8000, false, R"({"counts":[1,1,1,1,0,0]})"));

  StoredRun cancelled = load(*store, "r1-aaaa");
  REQUIRE(cancelled.instances.size() == 4);
  CHECK(cancelled.instances[0].state == "cancelled");
  CHECK(cancelled.instances[0].ended_ms == 7000);
  CHECK(cancelled.instances[1].state == "cancelled");
  CHECK(cancelled.instances[1].ended_ms == 7000);
  CHECK(cancelled.instances[2].state == "passed");
  CHECK(cancelled.instances[2].ended_ms == 4000);
  CHECK(cancelled.instances[3].state == "failed");
  CHECK(cancelled.instances[3].ended_ms == 4500);

  StoredRun left = load(*store, "r2-bbbb");
  REQUIRE(left.instances.size() == 4);
  CHECK(left.instances[0].state == "queued");
  CHECK(left.instances[0].ended_ms == 0);
  CHECK(left.instances[1].state == "running");
  CHECK(left.instances[2].state == "passed");
  CHECK(left.instances[3].state == "failed");

  auto runs = store->runs();
  REQUIRE(runs.is_ok());
  REQUIRE(runs->size() == 2);
  CHECK((*runs)[0].id == "r1-aaaa");
  CHECK((*runs)[0].finished_ms == 7000);
  CHECK((*runs)[0].cancelled);
  CHECK((*runs)[0].summary == R"({"counts":[0,0,1,1,0,2]})");
  CHECK((*runs)[1].id == "r2-bbbb");
  CHECK((*runs)[1].finished_ms == 8000);
  CHECK_FALSE((*runs)[1].cancelled);
  CHECK((*runs)[1].summary == R"({"counts":[1,1,1,1,0,0]})");
}

TEST_CASE("journal store: the run sequence never goes back and delete_run forgets everything") {
  TempDir dir;
  const std::string path = dir.path() + "/journal.db";
  auto store = open_store(path);
  auto next = [&store] {
    auto seq = store->next_run_seq();
    REQUIRE(seq.is_ok());
    return *seq;
  };
  CHECK(next() == 1);
  ok(store->put_run(run_row("r3-cccc", 3)));
  CHECK(next() == 4);
  ok(store->put_run(run_row("r1-aaaa", 1)));  // an older number does not lower it
  CHECK(next() == 4);
  ok(store->put_run(run_row("r5-eeee", 5)));
  ok(store->put_instance(instance("r5-eeee", 0, "running")));
  ok(store->put_step(step("r5-eeee", 0, 0, "passed")));
  ok(store->put_instance(instance("r3-cccc", 0, "passed")));
  CHECK(next() == 6);

  ok(store->delete_run("r5-eeee"));
  CHECK(next() == 6);
  auto gone = store->load_run("r5-eeee");
  REQUIRE_FALSE(gone.is_ok());
  CHECK(gone.status().code() == Code::kNotFound);
  ok(store->reclaim());
  CHECK(load(*store, "r3-cccc").instances.size() == 1);  // other runs keep their rows

  auto runs = store->runs();
  REQUIRE(runs.is_ok());
  REQUIRE(runs->size() == 2);  // oldest (lowest seq) first
  CHECK((*runs)[0].id == "r1-aaaa");
  CHECK((*runs)[1].id == "r3-cccc");

  store.reset();
  CHECK(query(path, "SELECT COUNT(*) FROM instances WHERE run_id = 'r5-eeee'") == "0");
  CHECK(query(path, "SELECT COUNT(*) FROM steps WHERE run_id = 'r5-eeee'") == "0");
  CHECK(open_store(path)->next_run_seq().value() == 6);  // across a reopen too
}

TEST_CASE("journal store: a file at its page limit fails writes as a full disk, naming the path") {
  TempDir dir;
  const std::string path = dir.path() + "/journal.db";
  auto store = open_store(path, 16);
  const std::string big(1000, 'x');
  corral::Status failed;
  ok(store->begin());
  for (uint32_t i = 0; i < 2000 && failed.is_ok(); ++i) {
    InstanceRow row = instance("r1-aaaa", i, "passed");
    row.reason = big;
    failed = store->put_instance(row);
  }
  if (failed.is_ok()) failed = store->commit();
  store->rollback();
  REQUIRE_FALSE(failed.is_ok());
  CHECK(failed.code() == Code::kIo);
  CHECK_THAT(failed.message(), Catch::Contains(path));
  CHECK_THAT(failed.message(), Catch::Contains("full"));

  // Small writes still fit afterwards: the failure did not break the store.
  ok(store->put_run(run_row("r1-aaaa", 1)));
  CHECK(load(*store, "r1-aaaa").instances.empty());
}
