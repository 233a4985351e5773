// What only the PostgreSQL journal does: its schema on a fresh database, text PostgreSQL cannot
// hold, a connection lost and found again, a database it cannot reach, and the URL without its
// password wherever corral shows it. The store's contract itself runs on both stores
// (journal_store_test.cc, journal_schedules_test.cc).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "tests/unit/master/journal_bench.h"

using corral::Code;
using corral::Status;
using corral::master::journal::is_bad_write;
using corral::master::journal::is_postgresql;
using corral::master::journal::open_postgresql_store;
using corral::master::journal::redact_journal;
using corral::master::journal::Store;
using corral::master::journal::WriteTag;
using namespace corral::test;  // NOLINT: the journal's test bench

namespace {

struct Pg : AnyDb {
  Pg() { on("postgresql"); }
};

// Runs the loop until a read queued now has answered: the journal hands the writes it set
// aside to its callback before that.
void settle(Journal& journal, uv_loop_t* loop) {
  bool read = false;
  journal.read([](Store&) {}, [&] { read = true; });
  uv_timer_t tick;
  uv_timer_init(loop, &tick);
  uv_timer_start(&tick, [](uv_timer_t*) {}, 1, 1);
  CHECK(wait_for([&] { return read; }, [&] { uv_run(loop, UV_RUN_ONCE); }));
  uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
  uv_run(loop, UV_RUN_NOWAIT);  // the close completes before `tick` goes
}

std::string load_run_id(Store& s, const std::string& id) {
  auto got = s.load_run(id);
  REQUIRE_OK(got.status());
  return got->run.id;
}

}  // namespace

TEST_CASE_METHOD(Pg, "journal store (PostgreSQL): a new database gets the current schema, once") {
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  store.reset();
  for (int open = 0; open < 2; ++open) {  // opening it again changes nothing
    CHECK(sql("SELECT MAX(version) || '/' || COUNT(*) FROM schema_version") == "15/1");
    CHECK(sql("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public' AND "
              "table_name IN ('runs', 'instances', 'steps', 'meta', 'callbacks', 'schedules', "
              "'schedule_fires', 'load_tests')") == "8");
    store = reopen();
    CHECK(load_run_id(*store, "r1-aaaa") == "r1-aaaa");
    CHECK(store->next_seq(Store::kRunSeq).value() == 2);
    store.reset();
  }
}

TEST_CASE_METHOD(Pg, "journal store (PostgreSQL): bytes text cannot hold become U+FFFD, the rest stays") {
  InstanceRow row = instance("r1-aaaa", 0, "failed");
  row.reason = std::string("ok \xC3\xA9 bad \xFF\xFE nul ") + '\0' + " end \xE2\x82";
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  REQUIRE_OK(store->put_instance(row));
  auto got = store->load_run("r1-aaaa");
  REQUIRE_OK(got.status());
  REQUIRE(got->instances.size() == 1);
  CHECK(got->instances[0].reason ==
        "ok \xC3\xA9 bad \xEF\xBF\xBD\xEF\xBF\xBD nul \xEF\xBF\xBD end \xEF\xBF\xBD\xEF\xBF\xBD");
}

namespace {

// A row's written values, each column's, as text: two rows compare whole.
struct Values {
  std::vector<std::string> v;
  Values& bind(const std::string& x) {
    v.push_back("'" + x + "'");
    return *this;
  }
  Values& bind(int64_t x) {
    v.push_back(std::to_string(x));
    return *this;
  }
};
std::vector<std::string> values_of(InstanceRow row) {
  row.run_id.clear();
  Values out;
  bind_row(corral::master::journal::tables::kInstances, row, out);
  return out.v;
}

}  // namespace

TEST_CASE_METHOD(Pg,
                 "journal store (PostgreSQL): rows written together read back as written one by "
                 "one, a row's later write replacing its earlier") {
  const uint32_t n = 12'000;  // more than one statement's rows
  const std::vector<std::string> texts = {"",
                                          "NULL",
                                          "null",
                                          "a,b",
                                          "{x}",
                                          "\"quoted\"",
                                          "back\\slash\\",
                                          "\\\"",
                                          " spaced ",
                                          "ü \xE2\x82\xAC",
                                          std::string("bad \xFF nul ") + '\0' + " \xE2\x82",
                                          "}",
                                          "{",
                                          "'"};
  std::vector<InstanceRow> rows;
  for (uint32_t i = 0; i < n; ++i) {
    InstanceRow r = instance("r1-aaaa", i % 10'000, i % 3 == 0 ? "passed" : "running", i);
    r.next_step = i % 7;
    r.started_ms = 1'700'000'000'000 + i;
    r.reason = texts[i % texts.size()];
    r.resumes = i % 4;
    r.resume_reasons = i % 5 == 0 ? R"(["host_lost"])" : "";
    r.vars = texts[(i + 3) % texts.size()];
    r.checkpoint = texts[(i + 7) % texts.size()];
    rows.push_back(r);
  }
  rows.push_back(instance("r1-aaaa", 4, "failed", 99));  // twice in one statement's rows
  RunRow run = run_row("r1-aaaa", 1);
  run.instances = 10'000;
  RunRow twin = run_row("r2-bbbb", 2);
  twin.instances = 10'000;
  REQUIRE_OK(store->put_run(run));
  REQUIRE_OK(store->put_run(twin));
  std::vector<const InstanceRow*> together;
  for (const InstanceRow& r : rows) together.push_back(&r);
  REQUIRE_OK(store->begin());
  REQUIRE_OK(store->put_instances(together));
  for (InstanceRow r : rows) {
    r.run_id = "r2-bbbb";
    REQUIRE_OK(store->put_instance(r));
  }
  REQUIRE_OK(store->commit());
  auto a = store->load_run("r1-aaaa");
  auto b = store->load_run("r2-bbbb");
  REQUIRE_OK(a.status());
  REQUIRE_OK(b.status());
  REQUIRE(a->instances.size() == 10'000);
  REQUIRE(b->instances.size() == 10'000);
  size_t differ = 0;
  for (size_t i = 0; i < a->instances.size(); ++i) {
    if (values_of(a->instances[i]) != values_of(b->instances[i])) ++differ;
  }
  CHECK(differ == 0);
  CHECK(a->instances[4].state == "failed");       // the later write of instance 4
  CHECK(a->instances[1'999].state == "running");  // 1,999 then 11,999: the later one's
  CHECK(a->instances[1'999].ended_ms == 11'999);
  CHECK(a->instances[2'007].reason == "\"quoted\"");
}

TEST_CASE_METHOD(Pg,
                 "journal store (PostgreSQL): instances marked running together: new rows start, "
                 "rows there keep their start and lose their checkpoint") {
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  InstanceRow there = instance("r1-aaaa", 2, "queued");
  there.started_ms = 1'000;
  there.checkpoint = R"({"step":1})";
  there.resumes = 1;
  REQUIRE_OK(store->put_instance(there));
  REQUIRE_OK(store->mark_running("r1-aaaa", {0, 2, 3, 2, 0}, 5'000));
  REQUIRE_OK(store->mark_running("r1-aaaa", {}, 6'000));
  CHECK(sql("SELECT string_agg(idx || ':' || state || ':' || started_ms || ':' || checkpoint "
            "|| ':' || resumes, ' ' ORDER BY idx) FROM instances") ==
        "0:running:5000::0 2:running:1000::1 3:running:5000::0");
}

TEST_CASE_METHOD(Pg, "journal store (PostgreSQL): a lost connection fails a write to try again, and a read or begin() reconnects at once") {
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  CHECK(sql("SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
            pg->name() + "' AND application_name = 'corral'") == "1");
  Status s = store->put_instance(instance("r1-aaaa", 0, "running"));
  CHECK(s.code() == Code::kIo);
  CHECK_FALSE(is_bad_write(s));  // kept by the journal and tried again
  CHECK_THAT(s.message(), Catch::Contains("connection lost") && Catch::Contains(pg->name()));
  CHECK(load_run_id(*store, "r1-aaaa") == "r1-aaaa");  // a read outside a transaction reconnects
  CHECK(sql("SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
            pg->name() + "' AND application_name = 'corral'") == "1");
  CHECK(load_run_id(*store, "r1-aaaa") == "r1-aaaa");  // a read finds it lost: tried again
  CHECK(sql("SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
            pg->name() + "' AND application_name = 'corral'") == "1");
  REQUIRE_OK(store->begin());  // BEGIN finds it lost: connects again at once
  REQUIRE_OK(store->put_instance(instance("r1-aaaa", 0, "running")));
  REQUIRE_OK(store->commit());
  CHECK(sql("SELECT state FROM instances WHERE run_id = 'r1-aaaa'") == "running");
}

TEST_CASE("journal store (PostgreSQL): an unreachable database is named, without its password") {
  auto s = open_postgresql_store("postgresql://corral:s3cret@127.0.0.1:1/journal?connect_timeout=2");
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.status().code() == Code::kIo);
  CHECK_THAT(s.status().message(),
             Catch::StartsWith("journal postgresql://corral:***@127.0.0.1:1/journal") &&
                 Catch::Contains("cannot connect"));
  CHECK_THAT(s.status().message(), !Catch::Contains("s3cret"));
}

TEST_CASE("journal store: a journal is PostgreSQL by its URL, and shown without a password") {
  CHECK(is_postgresql("postgresql://h/db"));
  CHECK(is_postgresql("postgres://h/db"));
  CHECK_FALSE(is_postgresql("/var/lib/corral/journal.db"));
  CHECK_FALSE(is_postgresql("postgresql.db"));
  CHECK(redact_journal("postgresql://u:pw@h:5432/db") == "postgresql://u:***@h:5432/db");
  CHECK(redact_journal("postgres://u:p%40w@h/db?sslmode=require") ==
        "postgres://u:***@h/db?sslmode=require");
  CHECK(redact_journal("postgresql://h/db?user=u&password=pw&x=1") ==
        "postgresql://h/db?user=u&password=***&x=1");
  CHECK(redact_journal("postgresql://u@h/db") == "postgresql://u@h/db");
  CHECK(redact_journal("/home/u:pw@x/journal.db") == "/home/u:pw@x/journal.db");  // a file
}

TEST_CASE("journal: writes on the PostgreSQL store commit in order, and a read sees them") {
  PgDatabase db;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    auto opened = open_postgresql_store(db.url());
    REQUIRE_OK(opened.status());
    Journal journal(&loop, std::move(*opened));
    journal.write([](Store& s) { return s.put_run(run_row("r1-aaaa", 1)); });
    for (uint32_t i = 0; i < 200; ++i) {
      journal.write([i](Store& s) { return s.put_instance(instance("r1-aaaa", i, "running")); });
      journal.write([i](Store& s) { return s.put_instance(instance("r1-aaaa", i, "passed", i)); });
    }
    size_t passed = 0;
    bool read = false;
    journal.read(
        [&](Store& s) {
          auto r = s.load_run("r1-aaaa");
          if (!r) return;
          for (const auto& in : r->instances) passed += in.state == "passed" ? 1 : 0;
        },
        [&] { read = true; });
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, [](uv_timer_t*) {}, 1, 1);
    REQUIRE(wait_for([&] { return read; }, [&] { uv_run(&loop, UV_RUN_ONCE); }));
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);  // the close completes before `tick` goes
    CHECK(passed == 200);  // the later write of each instance won
    CHECK(journal.health().ok);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
  CHECK(db.sql("SELECT COUNT(*) FROM instances WHERE state = 'passed'") == "200");
}

TEST_CASE_METHOD(Pg, "journal store (PostgreSQL): a new run's instances become ranges to claim, all done when it ends") {
  RunRow big = run_row("r1-aaaa", 1);
  big.instances = 250;
  REQUIRE_OK(store->put_run(big));
  CHECK(sql("SELECT string_agg(lo || '-' || hi || ':' || host || done, ' ' ORDER BY lo) "
            "FROM claims WHERE run_id = 'r1-aaaa'") == "0-100:0 100-200:0 200-250:0");
  REQUIRE_OK(store->put_run(big));  // again: the ranges stay as they are
  CHECK(sql("SELECT COUNT(*) FROM claims") == "3");
  RunRow done = run_row("r2-bbbb", 2);
  done.finished_ms = 1'700'000'000'002;
  REQUIRE_OK(store->put_run(done));  // a finished run has nothing to claim
  CHECK(sql("SELECT COUNT(*) FROM claims WHERE run_id = 'r2-bbbb'") == "0");

  store->set_fence("h1", 0);
  sql("UPDATE claims SET host = 'h1' WHERE lo IN (0, 200)");
  CHECK_FALSE(store->run_complete("r1-aaaa").value());
  REQUIRE_OK(store->claim_done("r1-aaaa", 0));
  REQUIRE_OK(store->claim_done("r1-aaaa", 100));  // not h1's: unchanged
  CHECK(sql("SELECT string_agg(lo || ':' || done, ' ' ORDER BY lo) FROM claims") ==
        "0:1 100:0 200:0");
  sql("UPDATE claims SET host = 'h1' WHERE lo = 100");
  REQUIRE_OK(store->claim_done("r1-aaaa", 100));
  REQUIRE_OK(store->claim_done("r1-aaaa", 200));
  CHECK(store->run_complete("r1-aaaa").value());
  // A range claimed at another epoch of the host is not this life's to close.
  sql("UPDATE claims SET done = 0, epoch = 3 WHERE lo = 200");
  REQUIRE_OK(store->claim_done("r1-aaaa", 200));
  CHECK_FALSE(store->run_complete("r1-aaaa").value());
  REQUIRE_OK(store->finish_run("r1-aaaa", 1'700'000'000'003, false, "{}"));
  CHECK(sql("SELECT COUNT(*) || '/' || SUM(done) FROM claims") == "3/3");  // nothing to claim
  REQUIRE_OK(store->delete_run("r1-aaaa"));
  CHECK(sql("SELECT COUNT(*) FROM claims") == "0");
}

TEST_CASE_METHOD(Pg, "journal store (PostgreSQL): once its epoch is taken, a host's writes about instances are fenced off and change nothing") {
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  sql("INSERT INTO hosts (id, address, started_ms, heartbeat_ms, epoch, capacity, held) "
      "VALUES ('h1', '', 0, 0, 4, 0, 0)");
  store->set_fence("h1", 4);
  REQUIRE_OK(store->begin());
  REQUIRE_OK(store->put_instance(instance("r1-aaaa", 0, "running")));
  // The transaction holds the host's row against a new epoch, not against its heartbeat.
  CHECK(sql("SET lock_timeout = '2s'; UPDATE hosts SET heartbeat_ms = 5 WHERE id = 'h1' "
            "RETURNING heartbeat_ms") == "5");
  REQUIRE_OK(store->commit());
  sql("UPDATE hosts SET epoch = 5 WHERE id = 'h1'");  // declared dead by another host
  REQUIRE_OK(store->begin());
  Status s = store->put_instance(instance("r1-aaaa", 0, "passed"));
  CHECK(s.code() == Code::kAborted);
  CHECK(is_bad_write(s));  // never tried again
  CHECK_THAT(s.message(), Catch::Contains("put_instance: fenced off: host h1 is no longer at epoch 4"));
  CHECK(store->put_step(step("r1-aaaa", 0, 0, "passed")).code() == Code::kAborted);
  CHECK(store->mark_running("r1-aaaa", {1}, 5).code() == Code::kAborted);
  CHECK(store->mark_resumed("r1-aaaa", {{1, 1, R"(["host_lost"])"}}).code() == Code::kAborted);
  REQUIRE_OK(store->put_callback({"r1-aaaa", 0, 1, "{}", 7}));  // not about this host's claim
  REQUIRE_OK(store->commit());
  CHECK(sql("SELECT string_agg(idx || ':' || state, ' ') FROM instances") == "0:running");
  CHECK(sql("SELECT COUNT(*) FROM steps") == "0");
  store->set_fence("h1", 5);  // registered again at the new epoch
  REQUIRE_OK(store->put_instance(instance("r1-aaaa", 0, "passed")));
  CHECK(sql("SELECT state FROM instances") == "passed");
}

TEST_CASE("journal: a fenced-off write is set aside without ending its instance, the others commit") {
  PgDatabase db;
  uv_loop_t loop;
  uv_loop_init(&loop);
  std::vector<std::string> rejected;
  {
    auto opened = open_postgresql_store(db.url());
    REQUIRE_OK(opened.status());
    db.sql("INSERT INTO hosts (id, address, started_ms, heartbeat_ms, epoch, capacity, held) "
           "VALUES ('h1', '', 0, 0, 2, 0, 0)");
    Journal journal(&loop, std::move(*opened));
    journal.set_on_rejected(
        [&](const WriteTag& tag, const std::string& error) { rejected.push_back(tag.run + error); });
    journal.read([](Store& s) { s.set_fence("h1", 1); }, nullptr);  // an epoch it lost
    journal.write([](Store& s) { return s.put_run(run_row("r1-aaaa", 1)); });
    journal.write([](Store& s) { return s.put_instance(instance("r1-aaaa", 0, "passed")); },
                  {"r1-aaaa", 0});
    journal.write([](Store& s) { return s.put_callback({"r1-aaaa", 0, 1, "{}", 7}); });
    settle(journal, &loop);
    auto h = journal.health();
    CHECK(h.ok);
    CHECK(h.fenced_writes == 1);
    CHECK(h.rejected_writes == 0);
    CHECK(h.committed == 2);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
  CHECK(rejected.empty());
  CHECK(db.sql("SELECT (SELECT COUNT(*) FROM runs) || '/' || (SELECT COUNT(*) FROM instances) || "
               "'/' || (SELECT COUNT(*) FROM callbacks)") == "1/0/1");
}

TEST_CASE("journal: on PostgreSQL a batch is pipelined, and a wrong write in it is set aside alone") {
  // Each row a write of its own, or rows queued together (as the master writes instances):
  // the rows go to the database in a few statements, and the one found wrong is set aside.
  const bool together = GENERATE(false, true);
  CAPTURE(together);
  PgDatabase db;
  uv_loop_t loop;
  uv_loop_init(&loop);
  std::vector<std::string> rejected;
  {
    auto opened = open_postgresql_store(db.url());
    REQUIRE_OK(opened.status());
    // No two instances may share a reason: the second "boom" is refused as a wrong write.
    db.sql("CREATE UNIQUE INDEX one_reason ON instances (reason) WHERE reason <> ''");
    Journal journal(&loop, std::move(*opened));
    journal.set_on_rejected([&](const WriteTag& tag, const std::string& error) {
      rejected.push_back(tag.run + "/" + std::to_string(tag.instance) + ": " + error);
    });
    journal.write([](Store& s) { return s.put_run(run_row("r1-aaaa", 1)); });
    for (uint32_t i = 0; i < 3000; ++i) {  // past the pipeline's depth: read back on the way
      InstanceRow row = instance("r1-aaaa", i, "passed", i);
      if (i == 7 || i == 2500) row.reason = "boom";
      if (together) {
        journal.put_instance(row);
      } else {
        journal.write([row](Store& s) { return s.put_instance(row); }, {"r1-aaaa", int64_t{i}});
      }
    }
    settle(journal, &loop);
    auto h = journal.health();
    CHECK(h.ok);
    CHECK(h.rejected_writes == 1);
    CHECK(h.committed == 3000);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
  REQUIRE(rejected.size() == 1);
  CHECK_THAT(rejected[0], Catch::StartsWith("r1-aaaa/2500: put_instance: duplicate key value"));
  CHECK(db.sql("SELECT COUNT(*) FROM instances") == "2999");
  CHECK(db.sql("SELECT COUNT(*) FROM claims") == "1");  // the run's row and ranges committed
}

// Not run by the suite (hidden): the journal's write rate on PostgreSQL, side by side: 50,000
// instance rows that are there already, each with its vars and checkpoint (as when a resumed
// instance is placed), written one by one, pipelined (each row a write), and queued together
// as the master queues them (a few statements). `corral_unit_tests "[.pg-pipeline]"`; the numbers
// are in BENCHMARKS.md.
TEST_CASE("journal bench: PostgreSQL writes per second, pipelined or not", "[.pg-pipeline]") {
  const char* host = std::getenv("CORRAL_BENCH_PG_HOST");  // e.g. a TCP address: "127.0.0.1"
  const char* kModes[] = {"one by one", "pipelined", "together"};
  for (int round = 0; round < 3; ++round) {
    for (int mode = 0; mode < 3; ++mode) {
      PgDatabase db;
      std::string url = db.url();
      if (host != nullptr) url += std::string("&hostaddr=") + host;
      uv_loop_t loop;
      uv_loop_init(&loop);
      double ms = 0;
      {
        auto opened = open_postgresql_store(url, mode != 0);
        REQUIRE_OK(opened.status());
        Journal journal(&loop, std::move(*opened));
        journal.write([](Store& s) { return s.put_run(run_row("r1-aaaa", 1)); });
        const int n = 50000;
        for (uint32_t i = 0; i < n; ++i) journal.put_instance(instance("r1-aaaa", i, "running"));
        journal.flush();
        auto start = std::chrono::steady_clock::now();
        for (uint32_t i = 0; i < n; ++i) {
          InstanceRow row = instance("r1-aaaa", i, "passed", i);
          row.vars = R"({"base":"http://127.0.0.1:12345","job":"j-0000012345"})";
          row.checkpoint = R"({"step":1,"attempts":3,"started_ms":1796639620026,"vars":{}})";
          if (mode == 2) {
            journal.put_instance(std::move(row));
          } else {
            journal.write([row](Store& s) { return s.put_instance(row); });
          }
        }
        journal.flush();
        ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        CHECK(journal.health().committed == 2 * n + 1);
        CHECK(db.sql("SELECT COUNT(*) FROM instances WHERE state = 'passed'") == std::to_string(n));
        WARN("round " << round << " " << kModes[mode] << ": " << ms << " ms, "
                      << static_cast<int>(n / ms * 1000) << " writes/s");
      }
      uv_run(&loop, UV_RUN_DEFAULT);
      CHECK(uv_loop_close(&loop) == 0);
    }
  }
}

TEST_CASE_METHOD(Pg,
                 "journal store (PostgreSQL): a run's end is summed up by the database as a host "
                 "would sum up its rows") {
  RunRow run = run_row("r1-aaaa", 1);
  run.instances = 43;
  REQUIRE_OK(store->put_run(run));
  std::vector<int64_t> ended;  // the durations a host would count
  auto put = [&](uint32_t idx, const std::string& state, uint32_t step, const std::string& why,
                 int64_t ms) {
    InstanceRow r = instance("r1-aaaa", idx, state, 1'000 + ms);
    r.started_ms = 1'000;
    r.next_step = step;
    r.reason = why;
    REQUIRE_OK(store->put_instance(r));
    if (state != "cancelled" && state != "running") ended.push_back(ms);
  };
  for (uint32_t i = 0; i < 10; ++i) put(i, "passed", 2, "", 10 * (i + 1));
  for (uint32_t i = 10; i < 13; ++i) put(i, "failed", 1, "b", i - 5);
  for (uint32_t i = 13; i < 16; ++i) put(i, "failed", 0, "z", 100 * (i - 11));
  char why[8];
  for (uint32_t i = 16; i < 41; ++i) {
    std::snprintf(why, sizeof why, "e%02u", i - 16);
    put(i, "errored", 2, why, i - 15);
  }
  put(41, "cancelled", 1, "", 999'999);  // not an ended instance's duration
  put(42, "running", 1, "", 0);

  auto t = store->tally_run("r1-aaaa");
  REQUIRE_OK(t.status());
  CHECK(t->states ==
        std::map<std::string, uint64_t>{
            {"passed", 10}, {"failed", 6}, {"errored", 25}, {"cancelled", 1}, {"running", 1}});
  // The ranks runs_json.cc's percentile() picks: round(p * (n - 1)) of the sorted durations.
  std::sort(ended.begin(), ended.end());
  auto rank = [&](double p) {
    return ended[static_cast<size_t>(p * static_cast<double>(ended.size() - 1) + 0.5)];
  };
  CHECK(t->p50_ms == rank(0.50));
  CHECK(t->p95_ms == rank(0.95));
  CHECK(t->max_ms == 400);
  // Most common first, then by step and reason; 20 at most.
  REQUIRE(t->failures.size() == 20);
  CHECK(t->failures[0].step == 0);
  CHECK(t->failures[0].reason == "z");
  CHECK(t->failures[0].count == 3);
  CHECK(t->failures[1].step == 1);
  CHECK(t->failures[1].reason == "b");
  CHECK(t->failures[2].reason == "e00");
  CHECK(t->failures[19].reason == "e17");
  CHECK(t->failures[19].count == 1);

  auto none = store->tally_run("r9-none");
  REQUIRE_OK(none.status());
  CHECK(none->states.empty());
  CHECK(none->p50_ms == 0);
  CHECK(none->failures.empty());
}
