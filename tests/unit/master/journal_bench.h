// What the journal's tests share: rows to write, a journal file, a store that fails on demand,
// and a Bench that runs a Journal on a loop of its own.
#pragma once

#include <sqlite3.h>
#include <uv.h>

#include <atomic>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "master/journal/journal.h"
#include "master/journal/tables.h"
#include "shared/proc.h"
#include "tests/support/pg_server.h"
#include "tests/support/temp_dir.h"

namespace corral::test {

using master::journal::CallbackRow;
using master::journal::FireRow;
using master::journal::InstanceRow;
using master::journal::Journal;
using master::journal::RunRow;
using master::journal::ScheduleRow;
using master::journal::StepRow;
using master::journal::Store;
using master::journal::StoredRun;
namespace tables = master::journal::tables;

// Requires an OK Status; the expansion shows the message of any other.
#define REQUIRE_OK(status) REQUIRE((status).message() == "")

inline std::unique_ptr<Store> open_store(const std::string& path, int64_t max_pages = 0) {
  auto store = master::journal::open_sqlite_store(path, max_pages);
  REQUIRE_OK(store.status());
  return std::move(*store);
}

// Runs `text` with sqlite3 itself (waiting while the journal holds the file's write lock);
// returns the first column of the last row it gave.
inline std::string sql(const std::string& path, const std::string& text) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_busy_timeout(db, 10000);
  std::string out;
  char* err = nullptr;
  auto row = [](void* o, int, char** v, char**) {
    *static_cast<std::string*>(o) = v[0] ? v[0] : "";
    return 0;
  };
  int rc = sqlite3_exec(db, text.c_str(), row, &out, &err);
  INFO((err ? err : ""));
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
  return out;
}

inline const char* const kScenario = R"({"name":"s","steps":[{"name":"a","request":{"url":"u"}}]})";
inline RunRow run_row(const std::string& id, uint64_t seq) {
  RunRow r;
  r.id = id;
  r.seq = seq;
  r.scenario = kScenario;
  r.vars = R"({"n":"ü \"q\""})";
  r.instances = 5;
  r.created_ms = 1'700'000'000'001;
  return r;
}
inline InstanceRow instance(const std::string& run, uint32_t idx, const std::string& state,
                            int64_t ended_ms = 0) {
  InstanceRow r;
  r.run_id = run;
  r.idx = idx;
  r.state = state;
  r.ended_ms = ended_ms;
  return r;
}
inline StepRow step(const std::string& run, uint32_t idx, uint32_t seq, const std::string& state) {
  StepRow r;
  r.run_id = run;
  r.idx = idx;
  r.seq = r.step = seq;
  r.state = state;
  return r;
}

// A field's value as the database shows it as text (a bool as 0 or 1).
template <typename Row>
std::string stored_text(const Row& row, const master::journal::Column<Row>& column) {
  return std::visit(
      [&](auto field) {
        if constexpr (std::is_same_v<std::decay_t<decltype(row.*field)>, std::string>) {
          return row.*field;
        } else {
          return std::to_string(static_cast<int64_t>(row.*field));
        }
      },
      column.field);
}

// Every field of a row, read through its table (master/journal/tables.h), "column=value" a line:
// one CHECK compares whole rows and shows which field differs.
template <typename Row>
std::string describe(const master::journal::Table<Row>& table, const Row& row) {
  std::string out;
  for (const auto& c : table.columns) out += std::string(c.name) + "=" + stored_text(row, c) + "\n";
  return out;
}
inline std::string describe(const RunRow& r) { return describe(tables::kRuns, r); }
inline std::string describe(const InstanceRow& r) { return describe(tables::kInstances, r); }
inline std::string describe(const StepRow& r) { return describe(tables::kSteps, r); }
inline std::string describe(const CallbackRow& r) { return describe(tables::kCallbacks, r); }
inline std::string describe(const ScheduleRow& r) { return describe(tables::kSchedules, r); }
template <typename Row>
std::string describe(const std::vector<Row>& rows) {
  std::string out;
  for (const Row& r : rows) out += describe(r) + "\n";
  return out;
}

// The values separated by '|', so that one CHECK compares several and shows both sides.
template <typename... T>
std::string join(const T&... v) {
  std::ostringstream out;
  ((out << v << '|'), ...);
  return out.str();
}

// A journal file in a fresh directory.
struct File {
  TempDir dir;
  const std::string path = dir.path() + "/journal.db";
};

// A store on a fresh journal of either kind: a SQLite file in a fresh directory, or a fresh
// PostgreSQL database (tests/support/pg_server.h). A test of the store's contract runs on both:
//   TEST_CASE_METHOD(AnyDb, "...") { EACH_STORE(); ... store->put_run(...) ... }
struct AnyDb {
  std::unique_ptr<File> file;
  std::unique_ptr<PgDatabase> pg;
  std::unique_ptr<Store> store;

  // Opens a store of `kind` ("sqlite" or "postgresql"); returns `kind`.
  const char* on(const char* kind) {
    if (std::string(kind) == "sqlite") {
      file = std::make_unique<File>();
    } else {
      pg = std::make_unique<PgDatabase>();
    }
    store = reopen();
    return kind;
  }
  bool postgres() const { return pg != nullptr; }
  // What the store's messages name: the file, or the database's URL.
  std::string where() const { return postgres() ? pg->url() : file->path; }
  // Another store on the same journal.
  Result<std::unique_ptr<Store>> open_again() const {
    return postgres() ? master::journal::open_postgresql_store(pg->url())
                      : master::journal::open_sqlite_store(file->path);
  }
  std::unique_ptr<Store> reopen() const {
    auto s = open_again();
    REQUIRE_OK(s.status());
    return std::move(*s);
  }
  // Runs `text` on the journal from another connection: the first column of its last row.
  std::string sql(const std::string& text) const {
    return postgres() ? pg->sql(text) : test::sql(file->path, text);
  }
  // SQL for the values of `expr` joined by `sep`, in the order of `order`.
  std::string joined(const std::string& expr, const std::string& sep,
                     const std::string& order) const {
    return postgres() ? "string_agg(CAST(" + expr + " AS TEXT), '" + sep + "' ORDER BY " + order + ")"
                      : "group_concat(" + expr + ", '" + sep + "')";
  }
};
// Runs the rest of the test once per kind of store, each named in a failure's message.
#define EACH_STORE()                                                             \
  const char* store_kind = on(GENERATE(as<const char*>{}, "sqlite", "postgresql")); \
  INFO("store: " << store_kind)

// A store that fails every commit while `failing` is set, as on a full disk.
inline const std::string kFull = "journal /x/journal.db: database or disk is full";
class FlakyStore final : public Store {
  using Ids = std::vector<uint32_t>;
  using S = const std::string&;

 public:
  explicit FlakyStore(std::unique_ptr<Store> in) : in_(std::move(in)) {}
  std::atomic<bool> failing{true};
  std::atomic<uint64_t> failed{0};  // commits failed so far
  Status begin() override { return in_->begin(); }
  Status commit() override {
    if (!failing) return in_->commit();
    failed += 1;
    return io_error(kFull);
  }
  void rollback() override { in_->rollback(); }
  Status savepoint() override { return in_->savepoint(); }
  Status release_savepoint() override { return in_->release_savepoint(); }
  Status rollback_savepoint() override { return in_->rollback_savepoint(); }
  Status put_run(const RunRow& r) override { return in_->put_run(r); }
  Status put_instance(const InstanceRow& r) override { return in_->put_instance(r); }
  Status mark_running(S r, const Ids& i, int64_t t) override { return in_->mark_running(r, i, t); }
  Status mark_resumed(S r, const std::vector<Resumed>& rows) override {
    return in_->mark_resumed(r, rows);
  }
  Status put_step(const StepRow& r) override { return in_->put_step(r); }
  Status put_callback(const CallbackRow& r) override { return in_->put_callback(r); }
  Status finish_run(S r, int64_t t, bool c, S s) override { return in_->finish_run(r, t, c, s); }
  Status set_quarantine(S id, S why) override { return in_->set_quarantine(id, why); }
  Status delete_run(S id) override { return in_->delete_run(id); }
  Status reclaim() override { return in_->reclaim(); }
  Status put_schedule(const master::journal::ScheduleRow& r) override {
    return in_->put_schedule(r);
  }
  Status set_schedule(S n, bool p, int64_t a) override { return in_->set_schedule(n, p, a); }
  Status delete_schedule(S n) override { return in_->delete_schedule(n); }
  Status put_fire(const master::journal::FireRow& r) override { return in_->put_fire(r); }
  Result<std::vector<master::journal::ScheduleRow>> schedules() override {
    return in_->schedules();
  }
  Status put_load_test(const master::journal::LoadTestRow& r) override {
    return in_->put_load_test(r);
  }
  Status delete_load_test(S id) override { return in_->delete_load_test(id); }
  Result<std::vector<master::journal::LoadTestRow>> load_tests(S host) override {
    return in_->load_tests(host);
  }
  Result<std::string> load_test_detail(S id) override { return in_->load_test_detail(id); }
  Result<uint64_t> next_seq(std::string_view c) override { return in_->next_seq(c); }
  Status bump_seq(std::string_view c, uint64_t next) override { return in_->bump_seq(c, next); }
  Result<std::vector<RunRow>> runs() override { return in_->runs(); }
  Result<StoredRun> load_run(S id) override { return in_->load_run(id); }
  Result<StoredRun> load_run_page(S id, uint32_t from, uint32_t to) override {
    return in_->load_run_page(id, from, to);
  }

 private:
  std::unique_ptr<Store> in_;
};

// Waits until `done` holds or 10 s pass, calling `turn` in between; returns `done()`.
inline bool wait_for(const std::function<bool()>& done, const std::function<void()>& turn) {
  uint64_t deadline = monotonic_ms() + 10000;
  while (!done() && monotonic_ms() < deadline) turn();
  return done();
}

// A journal on a temp file, with the loop its callbacks run on.
struct Bench : File {
  using Open = std::function<std::unique_ptr<Store>(const std::string& file)>;

  struct Flaky {};

  explicit Bench(Journal::Options opts = {})
      : Bench(opts, [](const std::string& file) { return open_store(file); }) {}
  // A journal on a FlakyStore, failing from the start.
  Bench(Journal::Options opts, Flaky)
      : Bench(opts, [this](const std::string& file) {
          auto store = std::make_unique<FlakyStore>(open_store(file));
          faults = store.get();
          return std::unique_ptr<Store>(std::move(store));
        }) {}
  // A journal on the store that `open` makes of the file.
  Bench(Journal::Options opts, const Open& open) {
    uv_loop_init(&loop);
    journal = std::make_unique<Journal>(&loop, open(path), opts);
  }
  ~Bench() {
    journal.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  // Runs the loop until `done` holds. The journal's own handle does not keep the loop alive:
  // a ticking timer does.
  bool run_until(const std::function<bool()>& done) {
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(
        &tick, [](uv_timer_t*) {}, 1, 1);
    bool held = wait_for(done, [this] { uv_run(&loop, UV_RUN_ONCE); });
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);
    return held;
  }
  void write(const InstanceRow& r, master::journal::WriteTag tag = {}) {
    journal->write([r](Store& s) { return s.put_instance(r); }, std::move(tag));
  }
  void write(const StepRow& r) {
    journal->write([r](Store& s) { return s.put_step(r); });
  }
  // Queues 1 + instances + steps writes.
  void write_run(const std::string& id, uint32_t instances, uint32_t steps) {
    journal->write([id](Store& s) { return s.put_run(run_row(id, 1)); });
    for (uint32_t i = 0; i < instances; ++i) write(instance(id, i, "running"));
    for (uint32_t k = 0; k < steps; ++k) write(step(id, 0, k, "passed"));
  }
  // "runs/instances/steps" rows in the file, as another connection sees them.
  std::string rows() {
    return sql(path,
               "SELECT (SELECT COUNT(*) FROM runs) || '/' || "
               "(SELECT COUNT(*) FROM instances) || '/' || (SELECT COUNT(*) FROM steps)");
  }

  uv_loop_t loop;
  std::unique_ptr<Journal> journal;
  FlakyStore* faults = nullptr;  // the journal's store when flaky, owned by the journal
};

}  // namespace corral::test
