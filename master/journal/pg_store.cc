// The PostgreSQL journal: the same statements as the SQLite store (master/journal/sql.h), on
// one libpq connection, blocking, used by the journal's writer thread (and at start-up by the
// loop, before the first write). Statements are prepared once per connection, with `?` numbered
// $1, $2, ... and every parameter sent as text. What differs from SQLite:
//  - A lost connection fails the call with kIo (the journal keeps the batch and tries again);
//    the next begin(), or the next statement outside a transaction, connects again. begin(),
//    or a read outside a transaction, that finds the connection lost connects again and tries
//    once more.
//  - Text must be UTF-8 without NUL bytes: other bytes are replaced with U+FFFD.
//  - Inside a batch's transaction, writes are sent in libpq's pipeline mode: one round trip
//    for many writes rather than one each. commit() reads their answers; the first failure
//    fails the commit (the journal then runs the batch write by write, without pipelining,
//    to find the wrong one).
//  - reclaim() does nothing: PostgreSQL's autovacuum makes deleted rows' space reusable.
//  - Migrations hold an advisory lock, so that hosts starting together migrate once; INTEGER
//    columns are BIGINT (for_postgresql()).
#include <libpq-fe.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <regex>

#include "master/journal/sql.h"
#include "master/journal/store.h"
#include "shared/proc.h"

namespace corral::master::journal {
namespace {

using namespace sql;  // NOLINT: the statements

constexpr const char* kMigrationLock = "SELECT pg_advisory_lock(7270170401)";
constexpr const char* kMigrationUnlock = "SELECT pg_advisory_unlock(7270170401)";

// SQLSTATE classes that say the statement's values are wrong: the same write would fail again
// on any database. 22: data exception (a value out of range, bad encoding); 23: integrity
// constraint violation; 54: program limit exceeded (a value too large). Anything else (a lost
// connection, a full disk, a read-only or shutting-down server, a serialization failure) keeps
// the write to be tried again: in doubt, a write is kept rather than dropped.
bool bad_values(const char* sqlstate) {
  if (sqlstate == nullptr) return false;
  std::string_view c(sqlstate, 2);
  return c == "22" || c == "23" || c == "54";
}

// The dialect table: a migration's SQL as PostgreSQL takes it. SQLite's INTEGER holds 64 bits,
// PostgreSQL's 32: every INTEGER column is a BIGINT there (an instance index, a count).
std::string for_postgresql(std::string text) {
  static const std::regex kInteger(R"(\bINTEGER\b)");
  return std::regex_replace(text, kInteger, "BIGINT");
}

// `?` placeholders numbered for PostgreSQL. The journal's SQL has no `?` inside a literal.
std::string numbered(const std::string& text) {
  std::string out;
  int n = 0;
  for (char c : text) {
    if (c == '?') {
      out += "$" + std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

// Valid UTF-8 without NUL: what a PostgreSQL text value may hold.
void append_text(std::string& out, const std::string& v) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  size_t i = 0;
  while (i < v.size()) {
    auto c = static_cast<unsigned char>(v[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len != 0 && c != 0 && i + len <= v.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(v[i + k]) >> 6) == 0x2;
    if (ok && len > 1) {
      uint32_t cp = c & (0xFF >> (len + 1));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(v[i + k]) & 0x3F);
      static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(v, i, len);
      i += len;
    } else {
      out += kReplacement;
      i += 1;
    }
  }
}

// One statement's parameters, as text.
class Params {
 public:
  Params& bind(const std::string& v) {
    values_.emplace_back();
    append_text(values_.back(), v);
    return *this;
  }
  Params& bind(int64_t v) {
    values_.push_back(std::to_string(v));
    return *this;
  }
  std::vector<const char*> pointers() const {
    std::vector<const char*> p;
    for (const auto& v : values_) p.push_back(v.c_str());
    return p;
  }
  int size() const { return static_cast<int>(values_.size()); }

 private:
  std::vector<std::string> values_;
};

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

class PgStore final : public Store {
 public:
  PgStore(std::string url, bool pipeline)
      : url_(std::move(url)), label_(redact_journal(url_)), pipeline_(pipeline) {}
  ~PgStore() override { disconnect(); }

  Status open() {
    if (Status s = connect(); !s) return s;
    return migrate();
  }

  Status begin() override {
    if (PQstatus(conn_) != CONNECTION_OK) {
      if (Status s = connect(); !s) return s;
    }
    Status s = exec("BEGIN", "begin");
    if (!s && conn_ == nullptr) {  // lost since the last statement: nothing to undo yet
      if (Status c = connect(); !c) return c;
      s = exec("BEGIN", "begin");
    }
    in_tx_ = s.is_ok();
    fence_held_ = false;
    return s;
  }
  Status commit() override {
    Status s = drain();  // the batch's writes in flight: a failure among them fails the commit
    if (s) s = exec("COMMIT", "commit");
    in_tx_ = false;
    one_by_one_ = false;
    fence_held_ = false;
    return s;
  }
  void rollback() override {
    (void)drain();
    in_tx_ = false;
    one_by_one_ = false;
    fence_held_ = false;
    if (PQstatus(conn_) == CONNECTION_OK) (void)exec("ROLLBACK", "rollback");
  }
  // The journal runs a batch write by write (savepoints) to find the wrong one: each write's
  // answer is then waited for.
  Status savepoint() override {
    one_by_one_ = true;
    return exec("SAVEPOINT one_write", "savepoint");
  }
  Status release_savepoint() override {
    return exec("RELEASE SAVEPOINT one_write", "release_savepoint");
  }
  Status rollback_savepoint() override {
    fence_held_ = false;  // a lock taken since the savepoint goes with it
    Status s = exec("ROLLBACK TO SAVEPOINT one_write", "rollback_savepoint");
    return s ? release_savepoint() : s;
  }

  Status put_run(const RunRow& r) override {
    Params p;
    p.bind(r.id).bind(static_cast<int64_t>(r.seq)).bind(r.scenario).bind(r.vars);
    p.bind(int64_t{r.instances}).bind(r.created_ms).bind(r.finished_ms);
    p.bind(int64_t{r.cancelled}).bind(r.summary).bind(int64_t{r.priority}).bind(r.data);
    if (Status s = run(kPutRun, p, "put_run"); !s) return s;
    if (Status s = run(kBumpSeq, Params().bind(static_cast<int64_t>(r.seq + 1)), "put_run"); !s)
      return s;
    if (r.finished_ms != 0) return Status::ok();
    Params c;
    c.bind(r.id).bind(int64_t{r.instances}).bind(static_cast<int64_t>(r.seq));
    c.bind(int64_t{r.instances});
    return run(kPutClaims, c, "put_run");
  }

  Status put_instance(const InstanceRow& r) override {
    Params p;
    p.bind(r.run_id).bind(int64_t{r.idx}).bind(r.state).bind(int64_t{r.next_step});
    p.bind(r.started_ms).bind(r.ended_ms).bind(r.reason).bind(int64_t{r.resumes});
    p.bind(int64_t{r.crash_resumes}).bind(r.resume_reasons).bind(r.vars).bind(r.checkpoint);
    if (Status s = check_fence("put_instance"); !s) return s;
    return run(kPutInstance, p, "put_instance");
  }

  Status mark_running(const std::string& run_id, const std::vector<uint32_t>& idx,
                      int64_t started_ms) override {
    if (Status s = check_fence("mark_running"); !s) return s;
    for (uint32_t i : idx) {
      Params p;
      p.bind(run_id).bind(int64_t{i}).bind(started_ms);
      if (Status s = run(kMarkRunning, p, "mark_running"); !s) return s;
    }
    return Status::ok();
  }

  Status put_step(const StepRow& r) override {
    Params p;
    p.bind(r.run_id).bind(int64_t{r.idx}).bind(int64_t{r.seq}).bind(int64_t{r.step});
    p.bind(r.state).bind(int64_t{r.attempts}).bind(r.started_ms).bind(r.ended_ms);
    p.bind(int64_t{r.status}).bind(r.until_ms).bind(r.reason).bind(r.url);
    if (Status s = check_fence("put_step"); !s) return s;
    return run(kPutStep, p, "put_step");
  }

  Status put_callback(const CallbackRow& r) override {
    Params p;
    p.bind(r.run_id).bind(int64_t{r.idx}).bind(int64_t{r.step}).bind(r.body).bind(r.received_ms);
    return run(kPutCallback, p, "put_callback");
  }

  Status finish_run(const std::string& run_id, int64_t finished_ms, bool cancelled,
                    const std::string& summary) override {
    Params p;
    p.bind(finished_ms).bind(int64_t{cancelled}).bind(summary).bind(run_id);
    if (Status s = run(kFinishRun, p, "finish_run"); !s) return s;
    if (Status s = run(kDeleteClaims, Params().bind(run_id), "finish_run"); !s) return s;
    if (!cancelled) return Status::ok();
    return run(kCancelOpen, Params().bind(finished_ms).bind(run_id), "finish_run");
  }

  Status delete_run(const std::string& run_id) override {
    for (const char* text :
         {kDeleteCallbacks, kDeleteSteps, kDeleteInstances, kDeleteClaims, kDeleteRun}) {
      if (Status s = run(text, Params().bind(run_id), "delete_run"); !s) return s;
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
    return run(kClaimDone, Params().bind(run_id).bind(int64_t{lo}).bind(fence_host_),
               "claim_done");
  }

  Result<bool> run_complete(const std::string& run_id) override {
    auto q = query(kRunOpenRange, Params().bind(run_id), "run_complete");
    if (!q) return q.status();
    return PQntuples(q->get()) == 0;
  }

  Status put_schedule(const ScheduleRow& r) override {
    Params p;
    p.bind(r.name).bind(r.cron).bind(r.scenario).bind(r.vars).bind(int64_t{r.instances});
    p.bind(int64_t{r.priority}).bind(int64_t{r.catch_up}).bind(int64_t{r.paused});
    p.bind(r.created_ms).bind(r.after_ms);
    return run(kPutSchedule, p, "put_schedule");
  }

  Status set_schedule(const std::string& name, bool paused, int64_t after_ms) override {
    return run(kSetSchedule, Params().bind(int64_t{paused}).bind(after_ms).bind(name),
               "set_schedule");
  }

  Status delete_schedule(const std::string& name) override {
    for (const char* text : {kDeleteFires, kDeleteSchedule}) {
      if (Status s = run(text, Params().bind(name), "delete_schedule"); !s) return s;
    }
    return Status::ok();
  }

  // As in the SQLite store: ON CONFLICT DO NOTHING, then a look at the row holding the key.
  Status put_fire(const FireRow& r) override {
    Params ins;
    ins.bind(r.schedule).bind(r.tick_ms).bind(r.run_id).bind(r.fired_ms).bind(r.schedule);
    if (Status s = run(kPutFire, ins, "put_fire"); !s) return s;
    auto held = query(kFireRun, Params().bind(r.schedule).bind(r.tick_ms), "put_fire");
    if (!held) return held.status();
    if (PQntuples(held->get()) == 0) return Status::ok();  // the schedule is gone
    std::string holder = text(*held, 0, 0);
    if (holder != r.run_id) {
      return invalid_argument("put_fire: schedule " + r.schedule + " already fired its tick at " +
                              iso8601_utc(r.tick_ms) + " as run " + holder);
    }
    Params up;
    up.bind(r.tick_ms).bind(r.schedule).bind(r.tick_ms);
    if (Status s = run(kFireAdvance, up, "put_fire"); !s) return s;
    return run(kPruneFires, Params().bind(r.schedule).bind(r.schedule), "put_fire");
  }

  Result<std::vector<ScheduleRow>> schedules() override {
    auto res = query(kSchedules, Params(), "schedules");
    if (!res) return res.status();
    std::vector<ScheduleRow> out;
    const PgResult& q = *res;
    for (int i = 0; i < PQntuples(q.get()); ++i) {
      out.push_back({text(q, i, 0), text(q, i, 1), text(q, i, 2), text(q, i, 3),
                     static_cast<uint32_t>(std::clamp<int64_t>(i64(q, i, 4), 0, UINT32_MAX)),
                     static_cast<uint32_t>(std::clamp<int64_t>(i64(q, i, 5), 1, 100)),
                     i64(q, i, 6) != 0, i64(q, i, 7) != 0, i64(q, i, 8), i64(q, i, 9),
                     i64(q, i, 10), i64(q, i, 11), text(q, i, 12)});
    }
    return out;
  }

  Result<uint64_t> next_run_seq() override {
    auto res = query("SELECT value FROM meta WHERE name = 'run_seq'", Params(), "next_run_seq");
    if (!res) return res.status();
    if (PQntuples(res->get()) == 0) return uint64_t{1};
    return static_cast<uint64_t>(i64(*res, 0, 0));
  }

  Result<std::vector<RunRow>> runs() override {
    auto res = query(std::string(kRunColumns) + " ORDER BY seq", Params(), "runs");
    if (!res) return res.status();
    std::vector<RunRow> out;
    for (int i = 0; i < PQntuples(res->get()); ++i) out.push_back(run_row(*res, i));
    return out;
  }

  Result<StoredRun> load_run(const std::string& run_id) override {
    return load_run_page(run_id, 0, UINT32_MAX);
  }

  Result<StoredRun> load_run_page(const std::string& run_id, uint32_t from, uint32_t to) override {
    StoredRun out;
    auto r = query(std::string(kRunColumns) + " WHERE id = ?", Params().bind(run_id), "load_run");
    if (!r) return r.status();
    if (PQntuples(r->get()) == 0) {
      return Status(Code::kNotFound, "no run \"" + run_id + "\" in the journal");
    }
    out.run = run_row(*r, 0);
    Params page;
    page.bind(run_id).bind(int64_t{from}).bind(int64_t{to});
    auto in = query(kInstanceColumns, page, "load_run");
    if (!in) return in.status();
    for (int i = 0; i < PQntuples(in->get()); ++i) {
      const PgResult& q = *in;
      out.instances.push_back({text(q, i, 0), u32(q, i, 1), text(q, i, 2), u32(q, i, 3),
                               i64(q, i, 4), i64(q, i, 5), text(q, i, 6), u32(q, i, 7),
                               u32(q, i, 8), text(q, i, 9), text(q, i, 10), text(q, i, 11)});
    }
    auto st = query(kStepColumns, page, "load_run");
    if (!st) return st.status();
    for (int i = 0; i < PQntuples(st->get()); ++i) {
      const PgResult& q = *st;
      out.steps.push_back({text(q, i, 0), u32(q, i, 1), u32(q, i, 2), u32(q, i, 3), text(q, i, 4),
                           u32(q, i, 5), i64(q, i, 6), i64(q, i, 7),
                           static_cast<int>(i64(q, i, 8)), i64(q, i, 9), text(q, i, 10),
                           text(q, i, 11)});
    }
    auto cb = query(kCallbackColumns, page, "load_run");
    if (!cb) return cb.status();
    for (int i = 0; i < PQntuples(cb->get()); ++i) {
      const PgResult& q = *cb;
      out.callbacks.push_back(
          {text(q, i, 0), u32(q, i, 1), u32(q, i, 2), text(q, i, 3), i64(q, i, 4)});
    }
    return out;
  }

 private:
  static std::string text(const PgResult& r, int row, int col) {
    if (PQgetisnull(r.get(), row, col)) return "";
    return std::string(PQgetvalue(r.get(), row, col),
                       static_cast<size_t>(PQgetlength(r.get(), row, col)));
  }
  static int64_t i64(const PgResult& r, int row, int col) {
    if (PQgetisnull(r.get(), row, col)) return 0;
    return std::strtoll(PQgetvalue(r.get(), row, col), nullptr, 10);
  }
  static uint32_t u32(const PgResult& r, int row, int col) {
    return static_cast<uint32_t>(i64(r, row, col));
  }
  static RunRow run_row(const PgResult& r, int i) {
    return {text(r, i, 0), static_cast<uint64_t>(i64(r, i, 1)), text(r, i, 2), text(r, i, 3),
            u32(r, i, 4), i64(r, i, 5), i64(r, i, 6), i64(r, i, 7) != 0, text(r, i, 8),
            static_cast<uint32_t>(std::clamp<int64_t>(i64(r, i, 9), 1, 100)), text(r, i, 10)};
  }

  Status connect() {
    disconnect();
    // Keywords before "dbname" are defaults: the URL's own settings win over them.
    const char* keys[] = {"connect_timeout", "application_name", "client_encoding", "dbname",
                          nullptr};
    const char* values[] = {"10", "corral", "UTF8", url_.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, 1);
    if (conn_ == nullptr) return io_error("journal " + label_ + ": out of memory");
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string msg = PQerrorMessage(conn_);
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
      disconnect();
      return io_error("journal " + label_ + ": cannot connect: " + msg);
    }
    (void)PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);  // "already exists"
    return Status::ok();
  }

  void disconnect() {
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = nullptr;
    prepared_.clear();
    piping_ = false;
    in_flight_.clear();
    piped_prepares_.clear();
  }

  Status migrate() {
    if (Status s = exec(kMigrationLock, "migrate"); !s) return s;
    Status s = migrate_locked();
    (void)exec(kMigrationUnlock, "migrate");
    return s;
  }

  Status migrate_locked() {
    if (Status s = exec("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)",
                        "migrate");
        !s) {
      return s;
    }
    auto q = query("SELECT COALESCE(MAX(version), 0) FROM schema_version", Params(), "migrate");
    if (!q) return q.status();
    int64_t version = i64(*q, 0, 0);
    constexpr int64_t kLatest = std::size(kMigrations);
    if (version > kLatest) {
      return invalid_argument("the journal " + label_ + " has schema version " +
                              std::to_string(version) + ", newer than this corral knows (" +
                              std::to_string(kLatest) + ")");
    }
    for (; version < kLatest; ++version) {
      if (Status s = begin(); !s) return s;
      Status s = exec(for_postgresql(kMigrations[version]), "migrate");
      if (s) s = exec("DELETE FROM schema_version", "migrate");
      if (s) {
        s = exec("INSERT INTO schema_version (version) VALUES (" + std::to_string(version + 1) +
                     ")",
                 "migrate");
      }
      if (s) s = commit();
      if (!s) {
        rollback();
        return s;
      }
    }
    return Status::ok();
  }

  // Outside a transaction, a connection lost earlier is made again for the next statement (a
  // read after the database restarted); inside one, the statement fails and the journal's
  // next begin() connects.
  Status ensure_connected(const char* what) {
    if (conn_ != nullptr) return Status::ok();
    if (in_tx_) return lost(what);
    return connect();
  }

  // A statement without parameters, possibly several (a migration).
  Status exec(const std::string& text, const char* what) {
    if (Status s = drain(); !s) return s;
    if (Status s = ensure_connected(what); !s) return s;
    PgResult r(PQexec(conn_, text.c_str()));
    return check(r, what);
  }

  // A write. Inside a batch's transaction it is pipelined (sent without waiting for its
  // answer, which commit() reads with the others); elsewhere it runs at once.
  Status run(const std::string& text, const Params& p, const char* what) {
    if (in_tx_ && !one_by_one_ && pipeline_) return send(text, p, what);
    auto r = query(text, p, what);
    return r ? Status::ok() : r.status();
  }

  // The name `text` is prepared under, preparing it (in the pipeline when piping) if needed.
  Result<std::string> prepared(const std::string& text, const char* what) {
    if (auto it = prepared_.find(text); it != prepared_.end()) return it->second;
    std::string name = "corral_" + std::to_string(++statements_);
    if (piping_) {
      if (PQsendPrepare(conn_, name.c_str(), numbered(text).c_str(), 0, nullptr) != 1)
        return lost(what);
      in_flight_.push_back(what);
      piped_prepares_.push_back(text);
    } else {
      PgResult prep(PQprepare(conn_, name.c_str(), numbered(text).c_str(), 0, nullptr));
      if (Status s = check(prep, what); !s) return s;
    }
    prepared_.emplace(text, name);
    return name;
  }

  Status send(const std::string& text, const Params& p, const char* what) {
    if (conn_ == nullptr) return lost(what);
    if (!piping_) {
      if (PQenterPipelineMode(conn_) != 1) return lost(what);
      piping_ = true;
    }
    auto name = prepared(text, what);
    if (!name) return name.status();
    std::vector<const char*> values = p.pointers();
    if (PQsendQueryPrepared(conn_, name->c_str(), p.size(), values.data(), nullptr, nullptr, 0) !=
        1) {
      return lost(what);
    }
    in_flight_.push_back(what);
    // Answers are read back often enough that neither side's socket buffer fills up (the
    // connection blocks: a full buffer on both sides would never drain).
    return in_flight_.size() >= kPipelineDepth ? drain() : Status::ok();
  }

  // Reads the answers of the statements in flight and leaves pipeline mode: the first failure
  // among them (the server skips the rest of the pipeline after it), or OK.
  Status drain() {
    if (!piping_) return Status::ok();
    piping_ = false;
    Status first;
    if (PQpipelineSync(conn_) != 1) first = lost("pipeline");
    for (size_t k = 0; first.code() != Code::kIo && k < in_flight_.size(); ++k) {
      PgResult r(PQgetResult(conn_));
      if (!r) {
        first = lost(in_flight_[k]);
        break;
      }
      ExecStatusType st = PQresultStatus(r.get());
      if (st != PGRES_PIPELINE_ABORTED && first.is_ok()) first = check(r, in_flight_[k]);
      while (PgResult(PQgetResult(conn_))) {
      }  // the end of this statement's answer
    }
    if (first.code() != Code::kIo && conn_ != nullptr) {
      PgResult sync(PQgetResult(conn_));  // PGRES_PIPELINE_SYNC
      if (PQexitPipelineMode(conn_) != 1) first = lost("pipeline");
    }
    in_flight_.clear();
    // A statement prepared in a pipeline that failed may not exist: prepare it again.
    if (!first) {
      for (const std::string& text : piped_prepares_) prepared_.erase(text);
    }
    piped_prepares_.clear();
    return first;
  }

  // A read outside a transaction that finds the connection gone (the server restarted since
  // the last statement) is tried once more on a new connection.
  Result<PgResult> query(const std::string& text, const Params& p, const char* what) {
    auto r = query_once(text, p, what);
    bool read = text.rfind("SELECT", 0) == 0;
    if (!r && read && !in_tx_ && conn_ == nullptr) r = query_once(text, p, what);
    return r;
  }

  Result<PgResult> query_once(const std::string& text, const Params& p, const char* what) {
    if (Status s = drain(); !s) return s;  // a read sees the writes sent before it
    if (Status s = ensure_connected(what); !s) return s;
    auto name = prepared(text, what);
    if (!name) return name.status();
    std::vector<const char*> values = p.pointers();
    PgResult r(PQexecPrepared(conn_, name->c_str(), p.size(), values.data(), nullptr,
                              nullptr, 0));
    if (Status s = check(r, what); !s) return s;
    return r;
  }

  Status check(const PgResult& r, const char* what) {
    ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Status::ok();
    if (PQstatus(conn_) != CONNECTION_OK) return lost(what);
    const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
    const char* primary = r ? PQresultErrorField(r.get(), PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string text = std::string(what) + ": " + (primary ? primary : PQerrorMessage(conn_));
    if (bad_values(state)) return invalid_argument(text);
    return io_error("journal " + label_ + ": " + text);
  }

  // Store::set_fence: the host's row, locked for the rest of the transaction, or kAborted.
  Status check_fence(const char* what) {
    if (fence_epoch_ == 0 || fence_held_) return Status::ok();
    auto q = query(kFence, Params().bind(fence_host_).bind(fence_epoch_), what);
    if (!q) return q.status();
    if (PQntuples(q->get()) == 0) {
      return Status(Code::kAborted, std::string(what) + ": fenced off: host " + fence_host_ +
                                        " is no longer at epoch " + std::to_string(fence_epoch_) +
                                        ", so its instances are another host's now");
    }
    fence_held_ = in_tx_;
    return Status::ok();
  }

  // The connection broke: the call fails as one to try again, and the next begin() reconnects.
  Status lost(const char* what) {
    std::string msg = conn_ != nullptr ? PQerrorMessage(conn_) : "not connected";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    disconnect();
    return io_error("journal " + label_ + ": " + what + ": connection lost: " + msg);
  }

  std::string url_;
  std::string label_;
  PGconn* conn_ = nullptr;
  bool in_tx_ = false;  // between begin() and commit() or rollback()
  std::string fence_host_;  // set_fence()
  int64_t fence_epoch_ = 0;
  bool fence_held_ = false;  // this transaction holds the host's row at fence_epoch_
  std::map<std::string, std::string> prepared_;  // statement text -> its name
  uint64_t statements_ = 0;                       // prepared on this store, for unique names
  bool pipeline_;            // writes inside transactions are pipelined
  bool one_by_one_ = false;  // this transaction runs with savepoints: no pipelining
  bool piping_ = false;      // in libpq's pipeline mode, with in_flight_ sent
  std::vector<const char*> in_flight_;        // what each statement sent is, answers not read
  std::vector<std::string> piped_prepares_;   // statements prepared in the pipeline
  static constexpr size_t kPipelineDepth = 1000;
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
