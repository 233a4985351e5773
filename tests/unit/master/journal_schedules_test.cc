// The journal's store for schedules: their rows, and the fires whose key lets a tick fire once.
#include <catch2/catch.hpp>

#include "tests/unit/master/journal_bench.h"

using corral::Code;
using corral::Status;
using corral::master::journal::FireRow;
using corral::master::journal::is_bad_write;
using corral::master::journal::ScheduleRow;
using namespace corral::test;  // NOLINT: the journal's test bench

namespace {

ScheduleRow schedule_row(const std::string& name) {
  return {name, "*/5 * * * *", kScenario,         R"({"base":"ü"})", 3, 7,
          true, false,         1'700'000'000'000, 1'700'000'000'000, 0, 0,
          ""};
}

std::string all(Store& store) {
  auto rows = store.schedules();
  REQUIRE_OK(rows.status());
  std::string out;
  for (const ScheduleRow& r : *rows) out += describe(r) + "\n";
  return out;
}

struct Db : AnyDb {
  // "tick:run" of a schedule's fires, oldest first.
  std::string fires(const std::string& name) {
    return sql("SELECT " + joined("tick_ms || ':' || run_id", " ", "tick_ms") +
               " FROM (SELECT * FROM schedule_fires WHERE schedule = '" + name +
               "' ORDER BY tick_ms) AS f");
  }
};

struct SqliteDb : File {
  std::unique_ptr<Store> store = open_store(path);
};

}  // namespace

TEST_CASE_METHOD(Db, "journal store: schedule rows round-trip, each with its newest fire") {
  EACH_STORE();
  ScheduleRow a = schedule_row("a"), b = schedule_row("b");
  b.paused = true;
  b.catch_up = false;
  REQUIRE_OK(store->put_schedule(b));
  REQUIRE_OK(store->put_schedule(a));
  CHECK(all(*store) == describe(a) + "\n" + describe(b) + "\n");  // by name
  REQUIRE_OK(store->put_fire({"a", 1'700'000'300'000, "r1-aaaa", 1'700'000'300'004}));
  REQUIRE_OK(store->put_fire({"a", 1'700'000'600'000, "r2-bbbb", 1'700'000'600'009}));
  ScheduleRow fired = a;
  fired.after_ms = 1'700'000'600'000;  // moved up to the newest tick
  fired.last_tick_ms = 1'700'000'600'000;
  fired.last_fired_ms = 1'700'000'600'009;
  fired.last_run = "r2-bbbb";
  CHECK(all(*store) == describe(fired) + "\n" + describe(b) + "\n");
  store.reset();
  store = reopen();  // and across a reopen
  CHECK(all(*store) == describe(fired) + "\n" + describe(b) + "\n");
}

TEST_CASE_METHOD(Db, "journal store: put_schedule replaces a row of the same name") {
  EACH_STORE();
  REQUIRE_OK(store->put_schedule(schedule_row("a")));
  ScheduleRow again = schedule_row("a");
  again.cron = "0 3 * * *";
  again.instances = 9;
  again.created_ms = again.after_ms = 1'800'000'000'000;
  REQUIRE_OK(store->put_schedule(again));
  CHECK(all(*store) == describe(again) + "\n");
}

TEST_CASE_METHOD(Db, "journal store: set_schedule pauses, resumes and moves after_ms") {
  EACH_STORE();
  REQUIRE_OK(store->put_schedule(schedule_row("a")));
  REQUIRE_OK(store->set_schedule("a", true, 1'700'000'000'000));
  ScheduleRow paused = schedule_row("a");
  paused.paused = true;
  CHECK(all(*store) == describe(paused) + "\n");
  REQUIRE_OK(store->set_schedule("a", false, 1'750'000'000'000));
  ScheduleRow want = schedule_row("a");
  want.after_ms = 1'750'000'000'000;
  CHECK(all(*store) == describe(want) + "\n");
  REQUIRE_OK(store->set_schedule("nope", true, 1));  // no such schedule: nothing happens
  CHECK(all(*store) == describe(want) + "\n");
}

TEST_CASE_METHOD(Db, "journal store: a tick fires once: another run for it is refused") {
  EACH_STORE();
  REQUIRE_OK(store->put_schedule(schedule_row("a")));
  const FireRow first{"a", 1'700'000'300'000, "r1-aaaa", 1'700'000'300'001};
  REQUIRE_OK(store->put_fire(first));
  // The same fire again (a batch tried again after a failed commit) changes nothing.
  REQUIRE_OK(store->put_fire(first));
  Status s = store->put_fire({"a", 1'700'000'300'000, "r2-bbbb", 1'700'000'300'002});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(is_bad_write(s));
  CHECK(s.message() ==
        "put_fire: schedule a already fired its tick at 2023-11-14T22:18:20Z as run r1-aaaa");
  CHECK(fires("a") == "1700000300000:r1-aaaa");
  // The key is in the schema itself, for any writer.
  CHECK(sql(postgres() ? "SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'schedule_fires' "
                         "AND indexdef LIKE 'CREATE UNIQUE INDEX%'"
                       : "SELECT COUNT(*) FROM pragma_index_list('schedule_fires') "
                         "WHERE \"unique\" = 1") == "1");
}

TEST_CASE_METHOD(Db, "journal store: a fire moves after_ms up, never back") {
  EACH_STORE();
  REQUIRE_OK(store->put_schedule(schedule_row("a")));
  REQUIRE_OK(store->set_schedule("a", false, 1'700'000'900'000));
  REQUIRE_OK(store->put_fire({"a", 1'700'000'600'000, "r1-aaaa", 1}));
  CHECK(sql("SELECT after_ms FROM schedules") == "1700000900000");
  REQUIRE_OK(store->put_fire({"a", 1'700'001'200'000, "r2-bbbb", 2}));
  CHECK(sql("SELECT after_ms FROM schedules") == "1700001200000");
}

TEST_CASE_METHOD(Db, "journal store: a fire for a schedule removed meanwhile records nothing") {
  EACH_STORE();
  REQUIRE_OK(store->put_fire({"gone", 1'700'000'300'000, "r1-aaaa", 1}));
  CHECK(sql("SELECT COUNT(*) FROM schedule_fires") == "0");
}

TEST_CASE_METHOD(Db, "journal store: delete_schedule forgets the schedule and its fires") {
  EACH_STORE();
  REQUIRE_OK(store->put_schedule(schedule_row("a")));
  REQUIRE_OK(store->put_schedule(schedule_row("b")));
  REQUIRE_OK(store->put_fire({"a", 1'700'000'300'000, "r1-aaaa", 1}));
  REQUIRE_OK(store->put_fire({"b", 1'700'000'300'000, "r2-bbbb", 1}));
  REQUIRE_OK(store->delete_schedule("a"));
  REQUIRE_OK(store->delete_schedule("nope"));
  CHECK(sql("SELECT " + joined("name", ",", "name") + " FROM schedules") == "b");
  CHECK(fires("a") == "");
  CHECK(fires("b") == "1700000300000:r2-bbbb");
}

TEST_CASE_METHOD(Db, "journal store: a schedule keeps its newest 100 fires") {
  EACH_STORE();
  REQUIRE_OK(store->put_schedule(schedule_row("a")));
  REQUIRE_OK(store->put_schedule(schedule_row("b")));
  REQUIRE_OK(store->put_fire({"b", 5, "r0-0000", 1}));
  REQUIRE_OK(store->begin());
  for (int64_t t = 1; t <= 130; ++t) {
    REQUIRE_OK(store->put_fire({"a", t * 60000, "r" + std::to_string(t), t}));
  }
  REQUIRE_OK(store->commit());
  CHECK(sql("SELECT COUNT(*) || ' ' || MIN(tick_ms) || ' ' || MAX(tick_ms) FROM "
            "schedule_fires WHERE schedule = 'a'") == "100 1860000 7800000");
  CHECK(fires("b") == "5:r0-0000");  // another schedule's are its own
}

TEST_CASE_METHOD(SqliteDb, "journal store: a file of schema 4 gains the schedules' tables") {
  REQUIRE_OK(store->put_run(run_row("r1-aaaa", 1)));
  store.reset();
  sql(path, "DROP TABLE schedules; DROP TABLE schedule_fires");  // as version 4 left it
  sql(path, "ALTER TABLE runs DROP COLUMN data");
  sql(path, "DROP TABLE hosts; DROP TABLE claims");
  sql(path, "DROP TABLE loads; DROP TABLE load_shares; DROP TABLE load_seconds");
  sql(path, "ALTER TABLE runs DROP COLUMN quarantine");
  sql(path, "ALTER TABLE steps DROP COLUMN tls_us");
  sql(path, "ALTER TABLE steps DROP COLUMN body");
  sql(path, "DROP TABLE load_tests");
  sql(path, "UPDATE schema_version SET version = 4");
  store = open_store(path);
  CHECK(sql(path, "SELECT MAX(version) FROM schema_version") == "15");
  REQUIRE_OK(store->put_schedule(schedule_row("a")));
  CHECK(all(*store) == describe(schedule_row("a")) + "\n");
  CHECK(store->load_run("r1-aaaa").is_ok());  // the runs are still there
}
