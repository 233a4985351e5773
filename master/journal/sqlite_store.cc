// The SQLite journal. Statements (master/journal/sql.h, shared with the PostgreSQL store) are
// prepared once and reused; the SQLite-only parts are the pragmas in open() and reclaim().
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "master/journal/migrate.h"
#include "master/journal/sql.h"
#include "master/journal/store.h"
#include "shared/proc.h"

namespace corral::master::journal {
namespace {

using namespace sql;  // NOLINT: the statements

// Whether SQLite's result code says that the statement's values are wrong: the same write
// would fail again on any disk. Every other code (SQLITE_FULL, IOERR, READONLY, BUSY, LOCKED,
// CANTOPEN, NOMEM, CORRUPT, NOTADB, PROTOCOL, INTERRUPT, ABORT, SCHEMA, PERM, NOLFS, MISUSE,
// the generic SQLITE_ERROR and codes newer than this file) keeps the write to be tried again:
// in doubt, a write is kept rather than dropped.
bool bad_values(int rc) {
  switch (rc & 0xff) {  // the primary code of an extended one
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return true;
    default:
      return false;
  }
}

// One prepared statement: bind by position, step, read columns (found by name), reset.
class Stmt {
 public:
  explicit Stmt(sqlite3_stmt* s) : s_(s) {}
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // A value that does not bind (too big, one too many) fails the next step() with its code,
  // rather than leaving the parameter NULL.
  Stmt& bind(const std::string& v) {
    return failed(sqlite3_bind_text64(s_, ++n_, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  Stmt& bind(int64_t v) { return failed(sqlite3_bind_int64(s_, ++n_, v)); }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return bind_rc_ != SQLITE_OK ? bind_rc_ : sqlite3_step(s_); }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
    n_ = 0;
    bind_rc_ = SQLITE_OK;
  }
  // The index of the result's column `name`, or -1.
  int column(const char* name) const {
    for (int i = 0; i < sqlite3_column_count(s_); ++i) {
      if (std::strcmp(sqlite3_column_name(s_, i), name) == 0) return i;
    }
    return -1;
  }
  int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, col))) : std::string();
  }

 private:
  Stmt& failed(int rc) {
    if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
    return *this;
  }

  sqlite3_stmt* s_;
  int n_ = 0;
  int bind_rc_ = SQLITE_OK;  // the first bind that failed since reset()
};

class SqliteStore final : public Store, private Dialect {
 public:
  SqliteStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteStore() override {
    stmts_.clear();
    sqlite3_close(db_);
  }

  Status open(int64_t max_pages) {
    // auto_vacuum must be chosen before the first table exists; it lets reclaim() shrink the
    // file after old runs are pruned.
    for (const char* pragma : {"PRAGMA auto_vacuum = INCREMENTAL", "PRAGMA busy_timeout = 5000",
                               "PRAGMA synchronous = FULL", "PRAGMA foreign_keys = OFF"}) {
      if (Status s = exec(pragma); !s) return s;
    }
    if (Status s = exec("PRAGMA journal_mode = WAL"); !s) return s;
    if (max_pages > 0) {
      if (Status s = exec("PRAGMA max_page_count = " + std::to_string(max_pages)); !s) return s;
    }
    return migrate(*this, *this);
  }

  Status begin() override { return exec("BEGIN"); }
  Status commit() override { return exec("COMMIT"); }
  void rollback() override { (void)exec("ROLLBACK"); }
  // Prepared once like the rest: the writer may set a savepoint around each of 50000 writes.
  Status savepoint() override { return done(stmt("SAVEPOINT one_write"), "savepoint"); }
  Status release_savepoint() override {
    return done(stmt("RELEASE SAVEPOINT one_write"), "release_savepoint");
  }
  // ROLLBACK TO keeps the savepoint open in SQLite and PostgreSQL alike: RELEASE ends it.
  Status rollback_savepoint() override {
    Status s = done(stmt("ROLLBACK TO SAVEPOINT one_write"), "rollback_savepoint");
    return s ? release_savepoint() : s;
  }

  Status put_run(const RunRow& r) override {
    Stmt& s = stmt(kPutRun);
    bind_row(tables::kRuns, r, s);
    if (Status st = done(s, "put_run"); !st) return st;
    return bump_seq(Store::kRunSeq, r.seq + 1);
  }

  Status put_instance(const InstanceRow& r) override {
    Stmt& s = stmt(kPutInstance);
    bind_row(tables::kInstances, r, s);
    return done(s, "put_instance");
  }

  Status mark_running(const std::string& run_id, const std::vector<uint32_t>& idx,
                      int64_t started_ms) override {
    for (uint32_t i : idx) {
      if (Status s = done(stmt(kMarkRunning).bind(run_id).bind(int64_t{i}).bind(started_ms),
                          "mark_running");
          !s) {
        return s;
      }
    }
    return Status::ok();
  }

  Status mark_resumed(const std::string& run_id, const std::vector<Resumed>& rows) override {
    for (const Resumed& r : rows) {
      Stmt& s = stmt(kMarkResumed).bind(run_id).bind(int64_t{r.idx}).bind(r.resumes);
      if (Status st = done(s.bind(r.resume_reasons), "mark_resumed"); !st) return st;
    }
    return Status::ok();
  }

  Status put_step(const StepRow& r) override {
    Stmt& s = stmt(kPutStep);
    bind_row(tables::kSteps, r, s);
    return done(s, "put_step");
  }

  Status put_callback(const CallbackRow& r) override {
    Stmt& s = stmt(kPutCallback);
    bind_row(tables::kCallbacks, r, s);
    return done(s, "put_callback");
  }

  Status finish_run(const std::string& run_id, int64_t finished_ms, bool cancelled,
                    const std::string& summary) override {
    Stmt& s = stmt(kFinishRun);
    s.bind(finished_ms).bind(int64_t{cancelled}).bind(summary).bind(run_id);
    if (Status st = done(s, "finish_run"); !st) return st;
    if (!cancelled) return Status::ok();
    return done(stmt(kCancelOpen).bind(finished_ms).bind(run_id), "finish_run");
  }

  Status set_quarantine(const std::string& run_id, const std::string& reason) override {
    return done(stmt(kSetQuarantine).bind(reason).bind(run_id), "set_quarantine");
  }

  Status delete_run(const std::string& run_id) override {
    for (const char* sql : {kDeleteCallbacks, kDeleteSteps, kDeleteInstances, kDeleteRun}) {
      if (Status s = done(stmt(sql).bind(run_id), "delete_run"); !s) return s;
    }
    return Status::ok();
  }

  Status put_schedule(const ScheduleRow& r) override {
    Stmt& s = stmt(kPutSchedule);
    bind_row(tables::kSchedules, r, s);
    return done(s, "put_schedule");
  }

  Status set_schedule(const std::string& name, bool paused, int64_t after_ms) override {
    return done(stmt(kSetSchedule).bind(int64_t{paused}).bind(after_ms).bind(name),
                "set_schedule");
  }

  Status delete_schedule(const std::string& name) override {
    for (const char* sql : {kDeleteFires, kDeleteSchedule}) {
      if (Status s = done(stmt(sql).bind(name), "delete_schedule"); !s) return s;
    }
    return Status::ok();
  }

  // ON CONFLICT DO NOTHING, then a look at the row that holds the key: the same fire again (a
  // batch retried after a failed commit) is a no-op, while another run for the tick is refused.
  Status put_fire(const FireRow& r) override {
    Stmt& ins = stmt(kPutFire);
    bind_row(tables::kFires, r, ins);
    ins.bind(r.schedule);
    if (Status s = done(ins, "put_fire"); !s) return s;
    Stmt& q = stmt(kFireRun);
    int rc = q.bind(r.schedule).bind(r.tick_ms).step();
    std::string holder = rc == SQLITE_ROW ? q.text(0) : "";
    q.reset();
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return error(rc, "put_fire");
    if (rc == SQLITE_DONE) return Status::ok();  // the schedule is gone
    if (holder != r.run_id) {
      return invalid_argument("put_fire: schedule " + r.schedule + " already fired its tick at " +
                              iso8601_utc(r.tick_ms) + " as run " + holder);
    }
    Stmt& up = stmt(kFireAdvance);
    if (Status s = done(up.bind(r.tick_ms).bind(r.schedule).bind(r.tick_ms), "put_fire"); !s) {
      return s;
    }
    return done(stmt(kPruneFires).bind(r.schedule).bind(r.schedule), "put_fire");
  }

  Result<std::vector<ScheduleRow>> schedules() override {
    std::vector<ScheduleRow> out;
    if (read_rows(stmt(kScheduleRows), tables::kSchedules, out) != SQLITE_DONE) {
      return error("schedules");
    }
    return out;
  }

  Status put_load_test(const LoadTestRow& r) override {
    Stmt& s = stmt(kPutLoadTest);
    bind_row(tables::kLoadTests, r, s);
    return done(s, "put_load_test");
  }

  Status delete_load_test(const std::string& id) override {
    return done(stmt(kDeleteLoadTest).bind(id), "delete_load_test");
  }

  Result<std::vector<LoadTestRow>> load_tests(const std::string& host) override {
    std::vector<LoadTestRow> out;
    if (read_rows(stmt(kLoadTestRows).bind(host), tables::kLoadTestSummaries, out) != SQLITE_DONE) {
      return error("load_tests");
    }
    return out;
  }

  Result<std::string> load_test_detail(const std::string& id) override {
    Stmt& s = stmt(kLoadTestDetail).bind(id);
    int rc = s.step();
    std::string detail = rc == SQLITE_ROW ? s.text(0) : std::string();
    s.reset();
    if (rc == SQLITE_DONE)
      return Status(Code::kNotFound, "no load test \"" + id + "\" in the journal");
    if (rc != SQLITE_ROW) return error("load_test_detail");
    return detail;
  }

  // Runs inside the writer's transaction: frees the pages of deleted rows from the file (the
  // WAL itself is kept small by SQLite's automatic checkpoints).
  Status reclaim() override { return exec("PRAGMA incremental_vacuum"); }

  Result<uint64_t> next_seq(std::string_view counter) override {
    Stmt& s = stmt(kNextSeq).bind(std::string(counter));
    int rc = s.step();
    uint64_t seq = rc == SQLITE_ROW ? static_cast<uint64_t>(s.i64(0)) : 1;
    s.reset();
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return error("next_seq");
    return seq;
  }

  Status bump_seq(std::string_view counter, uint64_t next) override {
    return done(stmt(kBumpSeq).bind(std::string(counter)).bind(static_cast<int64_t>(next)),
                "bump_seq");
  }

  Result<std::vector<RunRow>> runs() override {
    std::vector<RunRow> out;
    if (read_rows(stmt(kRunRows + " ORDER BY seq"), tables::kRuns, out) != SQLITE_DONE) {
      return error("runs");
    }
    return out;
  }

  Result<StoredRun> load_run(const std::string& run_id) override {
    return load_run_page(run_id, 0, UINT32_MAX);
  }

  Result<StoredRun> load_run_page(const std::string& run_id, uint32_t from, uint32_t to) override {
    std::vector<RunRow> run;
    if (read_rows(stmt(kRunRows + " WHERE id = ?").bind(run_id), tables::kRuns, run) !=
        SQLITE_DONE) {
      return error("load_run");
    }
    if (run.empty()) return Status(Code::kNotFound, "no run \"" + run_id + "\" in the journal");
    StoredRun out{std::move(run.front()), {}, {}, {}};
    auto page = [&](const std::string& sql) -> Stmt& {
      return stmt(sql).bind(run_id).bind(int64_t{from}).bind(int64_t{to});
    };
    if (read_rows(page(kInstanceRows), tables::kInstances, out.instances) != SQLITE_DONE ||
        read_rows(page(kStepRows), tables::kSteps, out.steps) != SQLITE_DONE ||
        read_rows(page(kCallbackRows), tables::kCallbacks, out.callbacks) != SQLITE_DONE) {
      return error("load_run");
    }
    return out;
  }

 private:
  // Steps through the rows of `s`, each read as a row of `table` onto `out`, and resets it:
  // SQLITE_DONE, or the code a step failed with.
  template <typename Row>
  static int read_rows(Stmt& s, const Table<Row>& table, std::vector<Row>& out) {
    RowReader<Row> read(table, s);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) out.push_back(read(s));
    s.reset();
    return rc;
  }

  // The migration loop's pieces (migrate.h).
  std::string where() const override { return path_; }
  Status exec_script(const std::string& text) override { return exec(text); }
  Result<int64_t> schema_version() override {
    Stmt& q = stmt("SELECT MAX(version) FROM schema_version");
    int rc = q.step();
    int64_t version = rc == SQLITE_ROW ? q.i64(0) : 0;
    q.reset();
    if (rc != SQLITE_ROW) return error("reading the schema version");
    return version;
  }

  Stmt& stmt(const std::string& sql) {
    auto it = stmts_.find(sql);
    if (it != stmts_.end()) return *it->second;
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
      // Every statement is a constant of this file: one that does not prepare is a bug.
      std::fprintf(stderr, "corral: journal statement does not prepare: %s\n%s\n",
                   sqlite3_errmsg(db_), sql.c_str());
      std::abort();
    }
    return *stmts_.emplace(sql, std::make_unique<Stmt>(raw)).first->second;
  }

  Status done(Stmt& s, const char* what) {
    int rc = s.step();
    Status st = rc == SQLITE_DONE || rc == SQLITE_ROW ? Status::ok() : error(rc, what);
    s.reset();
    return st;
  }

  Status exec(const std::string& sql) {
    char* msg = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg);
    if (rc == SQLITE_OK) return Status::ok();
    std::string text = msg ? msg : sqlite3_errmsg(db_);
    sqlite3_free(msg);
    return failure(rc, text);
  }

  // The statement `what` failed with `rc` (by default, the connection's last error). A later
  // successful bind clears the connection's error: then the message is the code's own.
  Status error(int rc, const char* what) const {
    bool current = (sqlite3_errcode(db_) & 0xff) == (rc & 0xff);
    const char* message = current ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    return failure(rc, std::string(what) + ": " + message);
  }
  Status error(const char* what) const { return error(sqlite3_errcode(db_), what); }

  // Bad values are the write's own fault, so the message leaves out the file; any other
  // failure names it.
  Status failure(int rc, const std::string& text) const {
    if (bad_values(rc)) return invalid_argument(text);
    return io_error("journal " + path_ + ": " + text);
  }

  sqlite3* db_;
  std::string path_;
  std::map<std::string, std::unique_ptr<Stmt>> stmts_;
};

}  // namespace

Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path, int64_t max_pages) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  const std::string hint = " (corral must be able to create and write files in its home)";
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return io_error("journal " + path + ": " + msg + hint);
  }
  auto store = std::make_unique<SqliteStore>(db, path);
  if (Status s = store->open(max_pages); !s) {
    bool access = s.message().find("unable to open") != std::string::npos ||
                  s.message().find("readonly") != std::string::npos;
    return access ? Status(s.code(), s.message() + hint) : s;
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace corral::master::journal
