// The PostgreSQL journal: the same statements as the SQLite store (master/journal/sql.h), on
// one blocking libpq connection (pg_conn.h: prepared statements, pipelined writes inside a
// transaction, reconnection), used by the journal's writer thread (and at start-up by the
// loop, before the first write). What differs from SQLite:
//  - A lost connection fails a write with kIo (the journal keeps the batch and tries again);
//    the next begin() or read connects again.
//  - Text must be UTF-8 without NUL bytes: other bytes are replaced with U+FFFD.
//  - A batch's writes are pipelined; the first failure fails the commit, and the journal then
//    runs the batch write by write, without pipelining, to find the wrong one.
//  - reclaim() does nothing: PostgreSQL's autovacuum makes deleted rows' space reusable.
//  - Migrations hold an advisory lock, so that hosts starting together migrate once; INTEGER
//    columns are BIGINT (for_postgresql()).
//  - Hosts sharing the database fence each other's writes (Store::set_fence).
#include <libpq-fe.h>

#include <algorithm>
#include <memory>
#include <regex>
#include <set>
#include <span>
#include <string_view>

#include "master/journal/migrate.h"
#include "master/journal/pg_conn.h"
#include "master/journal/sql.h"
#include "master/journal/store.h"
#include "shared/proc.h"

namespace corral::master::journal {
namespace {

using namespace sql;  // NOLINT: the statements

constexpr const char* kMigrationLock = "SELECT pg_advisory_lock(7270170401)";
constexpr const char* kMigrationUnlock = "SELECT pg_advisory_unlock(7270170401)";

// The dialect table: a migration's SQL as PostgreSQL takes it. SQLite's INTEGER holds 64 bits,
// PostgreSQL's 32: every INTEGER column is a BIGINT there (an instance index, a count).
std::string for_postgresql(std::string text) {
  static const std::regex kInteger(R"(\bINTEGER\b)");
  return std::regex_replace(text, kInteger, "BIGINT");
}

class PgStore final : public Store, private Dialect {
 public:
  PgStore(const std::string& url, bool pipeline) : db_(url, redact_journal(url), pipeline) {}

  Status open() {
    if (Status s = db_.connect(); !s) return s;
    return migrate(*this, *this);
  }

  Status begin() override {
    fence_held_ = false;
    return db_.begin();
  }
  Status commit() override {
    fence_held_ = false;
    return db_.commit();
  }
  void rollback() override {
    fence_held_ = false;
    db_.rollback();
  }
  Status savepoint() override {
    db_.one_by_one();
    return db_.exec("SAVEPOINT one_write", "savepoint");
  }
  Status release_savepoint() override {
    return db_.exec("RELEASE SAVEPOINT one_write", "release_savepoint");
  }
  Status rollback_savepoint() override {
    fence_held_ = false;  // a lock taken since the savepoint goes with it
    Status s = db_.exec("ROLLBACK TO SAVEPOINT one_write", "rollback_savepoint");
    return s ? release_savepoint() : s;
  }

  Status put_run(const RunRow& r) override {
    Params p;
    bind_row(tables::kRuns, r, p);
    if (Status s = db_.run(kPutRun, p, "put_run"); !s) return s;
    if (Status s = bump_seq(Store::kRunSeq, r.seq + 1); !s) return s;
    if (r.finished_ms != 0) return Status::ok();
    Params c;
    c.bind(r.id).bind(int64_t{r.instances}).bind(static_cast<int64_t>(r.seq));
    c.bind(int64_t{r.instances});
    return db_.run(kPutClaims, c, "put_run");
  }

  Status put_instance(const InstanceRow& r) override {
    Params p;
    bind_row(tables::kInstances, r, p);
    if (Status s = check_fence("put_instance"); !s) return s;
    return db_.run(kPutInstance, p, "put_instance");
  }

  // Rows queued together (instances placed after a claim, their progress as they poll) go up
  // to kManyRows to a statement: the database parses, plans and answers one statement instead
  // of thousands (1.1 to 1.7 times the rows per second of pipelined single writes, measured by
  // corral_unit_tests "[.pg-pipeline]").
  Status put_instances(std::span<const InstanceRow* const> rows) override {
    if (rows.size() == 1) return put_instance(*rows[0]);
    if (Status s = check_fence("put_instance"); !s) return s;
    for (size_t at = 0; at < rows.size(); at += kManyRows) {
      ArrayParams arrays;
      for (const InstanceRow* r :
           last_of_each(rows.subspan(at, std::min(kManyRows, rows.size() - at)))) {
        bind_row(tables::kInstances, *r, arrays);
        arrays.next_row();
      }
      Params p;
      arrays.bind_to(p);
      if (Status s = db_.run(kPutInstances, p, "put_instances"); !s) return s;
    }
    return Status::ok();
  }

  Status mark_running(const std::string& run_id, const std::vector<uint32_t>& idx,
                      int64_t started_ms) override {
    if (idx.empty()) return Status::ok();
    if (Status s = check_fence("mark_running"); !s) return s;
    std::vector<uint32_t> each(idx);  // one statement may not update a row twice
    std::sort(each.begin(), each.end());
    each.erase(std::unique(each.begin(), each.end()), each.end());
    ArrayParams arrays;
    for (uint32_t i : each) arrays.bind(int64_t{i}).next_row();
    Params p;
    p.bind(run_id).bind(started_ms);
    arrays.bind_to(p);
    return db_.run(kMarkRunningMany, p, "mark_running");
  }

  // The resumes of a dead host's instances, without the rest of their rows: a takeover of
  // 33,000 instances writes three columns of each rather than twelve.
  Status mark_resumed(const std::string& run_id, const std::vector<Resumed>& rows) override {
    if (rows.empty()) return Status::ok();
    if (Status s = check_fence("mark_resumed"); !s) return s;
    for (size_t at = 0; at < rows.size(); at += kManyRows) {
      ArrayParams arrays;
      std::set<uint32_t> seen;  // one statement may not update a row twice: the last one counts
      for (size_t i = std::min(rows.size(), at + kManyRows); i-- > at;) {
        const Resumed& r = rows[i];
        if (!seen.insert(r.idx).second) continue;
        arrays.bind(int64_t{r.idx}).bind(r.resumes).bind(r.resume_reasons).next_row();
      }
      Params p;
      p.bind(run_id);
      arrays.bind_to(p);
      if (Status s = db_.run(kMarkResumedMany, p, "mark_resumed"); !s) return s;
    }
    return Status::ok();
  }

  Status put_step(const StepRow& r) override {
    Params p;
    bind_row(tables::kSteps, r, p);
    if (Status s = check_fence("put_step"); !s) return s;
    return db_.run(kPutStep, p, "put_step");
  }

  Status put_callback(const CallbackRow& r) override {
    Params p;
    bind_row(tables::kCallbacks, r, p);
    return db_.run(kPutCallback, p, "put_callback");
  }

  Status finish_run(const std::string& run_id, int64_t finished_ms, bool cancelled,
                    const std::string& summary) override {
    Params p;
    p.bind(finished_ms).bind(int64_t{cancelled}).bind(summary).bind(run_id);
    if (Status s = db_.run(kFinishRun, p, "finish_run"); !s) return s;
    if (Status s = db_.run(kCloseClaims, Params().bind(run_id), "finish_run"); !s) return s;
    if (!cancelled) return Status::ok();
    return db_.run(kCancelOpen, Params().bind(finished_ms).bind(run_id), "finish_run");
  }

  Status set_quarantine(const std::string& run_id, const std::string& reason) override {
    return db_.run(kSetQuarantine, Params().bind(reason).bind(run_id), "set_quarantine");
  }

  Status delete_run(const std::string& run_id) override {
    for (const char* text :
         {kDeleteCallbacks, kDeleteSteps, kDeleteInstances, kDeleteClaims, kDeleteRun}) {
      if (Status s = db_.run(text, Params().bind(run_id), "delete_run"); !s) return s;
    }
    return Status::ok();
  }

  Status reclaim() override { return Status::ok(); }

  void set_fence(const std::string& host, int64_t epoch) override {
    fence_host_ = host;
    fence_epoch_ = epoch;
    fence_held_ = false;
  }

  Status claim_done(const std::string& run_id, uint32_t lo) override {
    Params p;
    p.bind(run_id).bind(int64_t{lo}).bind(fence_host_).bind(fence_epoch_);
    return db_.run(kClaimDone, p, "claim_done");
  }

  Status leave(const std::string& host, int64_t epoch) override {
    return db_.run(kLeave, Params().bind(host).bind(epoch), "leave");
  }

  Result<bool> run_complete(const std::string& run_id) override {
    auto q = db_.query(kRunOpenRange, Params().bind(run_id), "run_complete");
    if (!q) return q.status();
    return PQntuples(q->get()) == 0;
  }

  Result<RunTally> tally_run(const std::string& run_id) override {
    RunTally t;
    auto states = db_.query(kTallyStates, Params().bind(run_id), "tally_run");
    if (!states) return states.status();
    for (int i = 0; i < PQntuples(states->get()); ++i) {
      t.states[col_text(*states, i, 0)] += static_cast<uint64_t>(col_i64(*states, i, 1));
    }
    auto ms = db_.query(kTallyDurations, Params().bind(run_id), "tally_run");
    if (!ms) return ms.status();
    if (PQntuples(ms->get()) == 1) {
      t.p50_ms = col_i64(*ms, 0, 0);
      t.p95_ms = col_i64(*ms, 0, 1);
      t.max_ms = col_i64(*ms, 0, 2);
    }
    auto failures = db_.query(kTallyFailures, Params().bind(run_id), "tally_run");
    if (!failures) return failures.status();
    for (int i = 0; i < PQntuples(failures->get()); ++i) {
      t.failures.push_back({static_cast<uint32_t>(col_i64(*failures, i, 0)),
                            col_text(*failures, i, 1),
                            static_cast<uint64_t>(col_i64(*failures, i, 2))});
    }
    return t;
  }

  Status put_schedule(const ScheduleRow& r) override {
    Params p;
    bind_row(tables::kSchedules, r, p);
    return db_.run(kPutSchedule, p, "put_schedule");
  }

  Status set_schedule(const std::string& name, bool paused, int64_t after_ms) override {
    return db_.run(kSetSchedule, Params().bind(int64_t{paused}).bind(after_ms).bind(name),
                   "set_schedule");
  }

  Status delete_schedule(const std::string& name) override {
    for (const char* text : {kDeleteFires, kDeleteSchedule}) {
      if (Status s = db_.run(text, Params().bind(name), "delete_schedule"); !s) return s;
    }
    return Status::ok();
  }

  // As in the SQLite store: ON CONFLICT DO NOTHING, then a look at the row holding the key.
  Status put_fire(const FireRow& r) override {
    Params ins;
    bind_row(tables::kFires, r, ins);
    ins.bind(r.schedule);
    if (Status s = db_.run(kPutFire, ins, "put_fire"); !s) return s;
    auto held = db_.query(kFireRun, Params().bind(r.schedule).bind(r.tick_ms), "put_fire");
    if (!held) return held.status();
    if (PQntuples(held->get()) == 0) return Status::ok();  // the schedule is gone
    std::string holder = col_text(*held, 0, 0);
    if (holder != r.run_id) {
      return invalid_argument("put_fire: schedule " + r.schedule + " already fired its tick at " +
                              iso8601_utc(r.tick_ms) + " as run " + holder);
    }
    Params up;
    up.bind(r.tick_ms).bind(r.schedule).bind(r.tick_ms);
    if (Status s = db_.run(kFireAdvance, up, "put_fire"); !s) return s;
    return db_.run(kPruneFires, Params().bind(r.schedule).bind(r.schedule), "put_fire");
  }

  Result<std::vector<ScheduleRow>> schedules() override {
    auto res = db_.query(kScheduleRows, Params(), "schedules");
    if (!res) return res.status();
    return rows_of(*res, tables::kSchedules);
  }

  Status put_load_test(const LoadTestRow& r) override {
    Params p;
    bind_row(tables::kLoadTests, r, p);
    return db_.run(kPutLoadTest, p, "put_load_test");
  }

  Status delete_load_test(const std::string& id) override {
    return db_.run(kDeleteLoadTest, Params().bind(id), "delete_load_test");
  }

  Result<std::vector<LoadTestRow>> load_tests(const std::string& host) override {
    auto res = db_.query(kLoadTestRows, Params().bind(host), "load_tests");
    if (!res) return res.status();
    return rows_of(*res, tables::kLoadTestSummaries);
  }

  Result<std::string> load_test_detail(const std::string& id) override {
    auto res = db_.query(kLoadTestDetail, Params().bind(id), "load_test_detail");
    if (!res) return res.status();
    if (PQntuples(res->get()) == 0) {
      return Status(Code::kNotFound, "no load test \"" + id + "\" in the journal");
    }
    return col_text(*res, 0, 0);
  }

  Result<uint64_t> next_seq(std::string_view counter) override {
    auto res = db_.query(kNextSeq, Params().bind(std::string(counter)), "next_seq");
    if (!res) return res.status();
    if (PQntuples(res->get()) == 0) return uint64_t{1};
    return static_cast<uint64_t>(col_i64(*res, 0, 0));
  }

  Status bump_seq(std::string_view counter, uint64_t next) override {
    return db_.run(kBumpSeq, Params().bind(std::string(counter)).bind(static_cast<int64_t>(next)),
                   "bump_seq");
  }

  Result<std::vector<RunRow>> runs() override {
    auto res = db_.query(kRunRows + " ORDER BY seq", Params(), "runs");
    if (!res) return res.status();
    return rows_of(*res, tables::kRuns);
  }

  Result<StoredRun> load_run(const std::string& run_id) override {
    return load_run_page(run_id, 0, UINT32_MAX);
  }

  Result<StoredRun> load_run_page(const std::string& run_id, uint32_t from, uint32_t to) override {
    auto r = db_.query(kRunRows + " WHERE id = ?", Params().bind(run_id), "load_run");
    if (!r) return r.status();
    std::vector<RunRow> run = rows_of(*r, tables::kRuns);
    if (run.empty()) return Status(Code::kNotFound, "no run \"" + run_id + "\" in the journal");
    StoredRun out{std::move(run.front()), {}, {}, {}};
    Params page;
    page.bind(run_id).bind(int64_t{from}).bind(int64_t{to});
    auto in = db_.query(kInstanceRows, page, "load_run");
    if (!in) return in.status();
    out.instances = rows_of(*in, tables::kInstances);
    auto st = db_.query(kStepRows, page, "load_run");
    if (!st) return st.status();
    out.steps = rows_of(*st, tables::kSteps);
    auto cb = db_.query(kCallbackRows, page, "load_run");
    if (!cb) return cb.status();
    out.callbacks = rows_of(*cb, tables::kCallbacks);
    return out;
  }

 private:
  // Every row of `result`, read as rows of `table`.
  template <typename Row>
  static std::vector<Row> rows_of(const PgResult& result, const Table<Row>& table) {
    std::vector<Row> out;
    PgCells cells{result, 0};
    RowReader<Row> read(table, cells);
    for (; cells.row < PQntuples(result.get()); ++cells.row) out.push_back(read(cells));
    return out;
  }

  // The migration loop's pieces (migrate.h).
  std::string where() const override { return db_.label(); }
  Status exec_script(const std::string& text) override { return db_.exec(text, "migrate"); }
  Result<int64_t> schema_version() override {
    auto q = db_.query("SELECT COALESCE(MAX(version), 0) FROM schema_version", Params(), "migrate");
    if (!q) return q.status();
    return col_i64(*q, 0, 0);
  }
  std::string translated(const char* text) const override { return for_postgresql(text); }
  Status lock() override { return db_.exec(kMigrationLock, "migrate"); }
  void unlock() override { (void)db_.exec(kMigrationUnlock, "migrate"); }

  static constexpr size_t kManyRows = 5000;

  // The rows in order, each instance's last only: the later write of a row replaces its earlier.
  static std::vector<const InstanceRow*> last_of_each(std::span<const InstanceRow* const> rows) {
    std::set<std::pair<std::string_view, uint32_t>> seen;
    std::vector<const InstanceRow*> out;
    for (auto r = rows.rbegin(); r != rows.rend(); ++r) {
      if (seen.emplace((*r)->run_id, (*r)->idx).second) out.push_back(*r);
    }
    std::reverse(out.begin(), out.end());
    return out;
  }

  // Store::set_fence: the host's row, locked for the rest of the transaction, or kAborted.
  Status check_fence(const char* what) {
    if (fence_epoch_ == 0 || fence_held_) return Status::ok();
    auto q = db_.query(kFence, Params().bind(fence_host_).bind(fence_epoch_), what);
    if (!q) return q.status();
    if (PQntuples(q->get()) == 0) {
      return Status(Code::kAborted, std::string(what) + ": fenced off: host " + fence_host_ +
                                        " is no longer at epoch " + std::to_string(fence_epoch_) +
                                        ", so its instances are another host's now");
    }
    fence_held_ = db_.in_tx();
    return Status::ok();
  }

  PgConn db_;
  std::string fence_host_;  // set_fence()
  int64_t fence_epoch_ = 0;
  bool fence_held_ = false;  // this transaction holds the host's row at fence_epoch_
};

}  // namespace

bool is_postgresql(const std::string& spec) {
  return spec.rfind("postgresql://", 0) == 0 || spec.rfind("postgres://", 0) == 0;
}

std::string redact_journal(const std::string& spec) {
  if (!is_postgresql(spec)) return spec;
  static const std::regex kUserPassword(R"(^(postgres(?:ql)?://[^:/@?#]*):[^@/?#]*@)");
  static const std::regex kPasswordParam(R"(([?&]password=)[^&#]*)");
  std::string out = std::regex_replace(spec, kUserPassword, "$1:***@");
  return std::regex_replace(out, kPasswordParam, "$1***");
}

Result<std::unique_ptr<Store>> open_postgresql_store(const std::string& url, bool pipeline) {
  auto store = std::make_unique<PgStore>(url, pipeline);
  if (Status s = store->open(); !s) return s;
  return std::unique_ptr<Store>(std::move(store));
}

Result<std::unique_ptr<Store>> open_journal_store(const std::string& spec, int64_t max_pages) {
  if (is_postgresql(spec)) return open_postgresql_store(spec);
  return open_sqlite_store(spec, max_pages);
}

}  // namespace corral::master::journal
