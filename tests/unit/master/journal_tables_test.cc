// The journal's tables (master/journal/tables.h): each names every field of its row once and
// every column of its table, the statements made from them, reading by column name, and a row
// with every field set written and read back by each store.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "master/journal/sql.h"
#include "tests/unit/master/journal_bench.h"

using namespace corral::master::journal;  // NOLINT: the rows, their tables and Store
using namespace corral::test;             // NOLINT: the journal's test bench

namespace {

// Converts to the type of any field: Row{AnyField{}...} compiles with as many as Row has fields.
struct AnyField {
  template <typename T>
  operator T() const;  // NOLINT: implicit on purpose; never called
};

template <typename Row, typename... Fields>
constexpr size_t field_count() {
  if constexpr (requires { Row{Fields{}..., AnyField{}}; }) {
    return field_count<Row, Fields..., AnyField>();
  } else {
    return sizeof...(Fields);
  }
}

// A row whose every field, set through its table, has a value of its own other than its default:
// text "<column>:<n>", numbers n (within the column's range), booleans true.
template <typename Row>
Row filled(const Table<Row>& table) {
  Row row;
  int64_t n = 10;
  for (const Column<Row>& c : table.columns) {
    ++n;
    std::visit(
        [&](auto field) {
          using T = std::decay_t<decltype(row.*field)>;
          if constexpr (std::is_same_v<T, std::string>) {
            row.*field = std::string(c.name) + ":" + std::to_string(n);
          } else if constexpr (std::is_same_v<T, bool>) {
            row.*field = true;
          } else {
            row.*field = static_cast<T>(std::clamp(n, c.range.min, c.range.max));
          }
        },
        c.field);
  }
  return row;
}

// The names of a table's columns, sorted, joined by ','.
template <typename Row>
std::string names(const Table<Row>& table) {
  std::vector<std::string> out;
  for (const Column<Row>& c : table.columns) {
    if (c.from == nullptr) out.push_back(c.name);
  }
  std::sort(out.begin(), out.end());
  std::string joined;
  for (const std::string& n : out) joined += (joined.empty() ? "" : ",") + n;
  return joined;
}

template <typename Row>
void check_covers_fields(const Table<Row>& table) {
  INFO("table " << table.name);
  CHECK(table.columns.size() == field_count<Row>());
  for (size_t i = 0; i < table.columns.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      CHECK(table.columns[i].field != table.columns[j].field);
      CHECK(std::string(table.columns[i].name) != table.columns[j].name);
    }
  }
}

// A result row for RowReader: columns by name, in whatever order the query gave them.
struct FakeCells {
  std::vector<std::pair<std::string, std::string>> columns;  // name, value
  int column(const char* name) const {
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].first == name) return static_cast<int>(i);
    }
    return -1;
  }
  int64_t i64(int col) const { return std::stoll(columns[col].second); }
  std::string text(int col) const { return columns[col].second; }
};

}  // namespace

TEST_CASE("journal tables: each table names every field of its row once") {
  check_covers_fields(tables::kRuns);
  check_covers_fields(tables::kInstances);
  check_covers_fields(tables::kSteps);
  check_covers_fields(tables::kCallbacks);
  check_covers_fields(tables::kSchedules);
  check_covers_fields(tables::kFires);
}

TEST_CASE_METHOD(AnyDb, "journal tables: each names exactly the columns of its table") {
  EACH_STORE();
  auto columns = [&](const std::string& table) {
    if (postgres()) {
      return sql(
          "SELECT string_agg(column_name, ',' ORDER BY column_name) FROM "
          "information_schema.columns WHERE table_schema = 'public' AND table_name = '" +
          table + "'");
    }
    return sql("SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('" + table +
               "') ORDER BY name)");
  };
  CHECK(columns("runs") == names(tables::kRuns));
  CHECK(columns("instances") == names(tables::kInstances));
  CHECK(columns("steps") == names(tables::kSteps));
  CHECK(columns("callbacks") == names(tables::kCallbacks));
  CHECK(columns("schedules") == names(tables::kSchedules));
  CHECK(columns("schedule_fires") == names(tables::kFires));
}

TEST_CASE("journal tables: the statements that write rows follow each column's Write") {
  CHECK(sql::kPutRun ==
        "INSERT INTO runs (id, seq, scenario, vars, instances, created_ms, finished_ms, cancelled, "
        "summary, priority, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO "
        "UPDATE SET finished_ms = excluded.finished_ms, cancelled = excluded.cancelled, summary "
        "= excluded.summary");
  CHECK(sql::kPutCallback ==
        "INSERT INTO callbacks (run_id, idx, step, body, received_ms) VALUES (?, ?, ?, ?, ?) ON "
        "CONFLICT (run_id, idx, step) DO NOTHING");
  CHECK(sql::kPutFire ==
        "INSERT INTO schedule_fires (schedule, tick_ms, run_id, fired_ms) SELECT CAST(? AS TEXT), "
        "CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT) WHERE EXISTS (SELECT 1 FROM "
        "schedules WHERE name = ?) ON CONFLICT (schedule, tick_ms) DO NOTHING");
  CHECK_THAT(sql::kScheduleRows, Catch::StartsWith("SELECT name, cron,") &&
                                     Catch::Contains("after_ms, f.tick_ms AS last_tick_ms, "
                                                     "f.fired_ms AS last_fired_ms, f.run_id AS "
                                                     "last_run\nFROM schedules s"));
}

TEST_CASE("journal tables: a row is read by column name, in any order, numbers within range") {
  FakeCells cells{{{"priority", "500"},
                   {"quarantine", "q"},
                   {"data", "d"},
                   {"summary", "s"},
                   {"cancelled", "1"},
                   {"finished_ms", "-3"},
                   {"created_ms", "4"},
                   {"instances", "5"},
                   {"vars", "v"},
                   {"scenario", "sc"},
                   {"seq", "6"},
                   {"id", "r6-aaaa"},
                   {"unread", "x"}}};
  RowReader<RunRow> read(tables::kRuns, cells);
  const RunRow want{.id = "r6-aaaa",
                    .seq = 6,
                    .scenario = "sc",
                    .vars = "v",
                    .instances = 5,
                    .created_ms = 4,
                    .finished_ms = -3,
                    .cancelled = true,
                    .summary = "s",
                    .priority = 100,
                    .data = "d",
                    .quarantine = "q"};
  CHECK(describe(tables::kRuns, read(cells)) == describe(tables::kRuns, want));
  CHECK(read(cells) == want);
  cells.columns[0].second = "0";
  CHECK(read(cells).priority == 1);
}

TEST_CASE_METHOD(AnyDb,
                 "journal store: every field of a row is stored under its name and read back") {
  EACH_STORE();
  RunRow run = filled(tables::kRuns);
  InstanceRow instance = filled(tables::kInstances);
  StepRow step = filled(tables::kSteps);
  CallbackRow callback = filled(tables::kCallbacks);
  instance.run_id = step.run_id = callback.run_id = run.id;
  ScheduleRow schedule = filled(tables::kSchedules);
  schedule.last_tick_ms = schedule.after_ms - 1;  // a fire that does not move after_ms
  const FireRow fire{.schedule = schedule.name,
                     .tick_ms = schedule.last_tick_ms,
                     .run_id = schedule.last_run,
                     .fired_ms = schedule.last_fired_ms};
  REQUIRE_OK(store->put_run(run));
  REQUIRE_OK(store->set_quarantine(run.id, run.quarantine));
  REQUIRE_OK(store->put_instance(instance));
  REQUIRE_OK(store->put_step(step));
  REQUIRE_OK(store->put_callback(callback));
  REQUIRE_OK(store->put_schedule(schedule));
  REQUIRE_OK(store->put_fire(fire));

  auto got = store->load_run(run.id);
  REQUIRE_OK(got.status());
  REQUIRE(got->instances.size() == 1);
  REQUIRE(got->steps.size() == 1);
  REQUIRE(got->callbacks.size() == 1);
  CHECK(describe(got->run) == describe(run));
  CHECK(got->run == run);
  CHECK(describe(got->instances[0]) == describe(instance));
  CHECK(got->instances[0] == instance);
  CHECK(describe(got->steps[0]) == describe(step));
  CHECK(got->steps[0] == step);
  CHECK(describe(got->callbacks[0]) == describe(callback));
  CHECK(got->callbacks[0] == callback);
  auto runs = store->runs();
  REQUIRE_OK(runs.status());
  CHECK(*runs == std::vector<RunRow>{run});
  auto schedules = store->schedules();
  REQUIRE_OK(schedules.status());
  REQUIRE(schedules->size() == 1);
  CHECK(describe(schedules->front()) == describe(schedule));
  CHECK(schedules->front() == schedule);

  // Each field is in the column of its name, as another connection reads it.
  auto check_stored = [&](const auto& table, const auto& row) {
    for (const auto& c : table.columns) {
      if (c.from != nullptr) continue;
      INFO("column " << table.name << "." << c.name);
      CHECK(sql("SELECT " + std::string(c.name) + " FROM " + table.name) == stored_text(row, c));
    }
  };
  check_stored(tables::kRuns, run);
  check_stored(tables::kInstances, instance);
  check_stored(tables::kSteps, step);
  check_stored(tables::kCallbacks, callback);
  check_stored(tables::kSchedules, schedule);
  check_stored(tables::kFires, fire);
}
