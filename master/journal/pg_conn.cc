#include "master/journal/pg_conn.h"

#include "master/journal/pq_lazy.h"

#include "master/journal/pg_keywords.h"

#include "shared/text/utf8.h"

namespace corral::master::journal {
namespace {

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

}  // namespace

Params& Params::bind(const std::string& v) {
  values_.push_back(text::to_utf8(v));
  return *this;
}

std::string& ArrayParams::column() {
  if (column_ == arrays_.size()) arrays_.emplace_back("{");
  std::string& a = arrays_[column_++];
  if (a.size() > 1) a += ',';
  return a;
}

// Every text element is quoted, so that none reads as NULL; `"` and `\` are escaped. Bytes
// that are not UTF-8 are replaced when the array is bound (Params::bind).
ArrayParams& ArrayParams::bind(const std::string& v) {
  std::string& a = column();
  a += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') a += '\\';
    a += c;
  }
  a += '"';
  return *this;
}

ArrayParams& ArrayParams::bind(int64_t v) {
  column() += std::to_string(v);
  return *this;
}

void ArrayParams::bind_to(Params& p) const {
  for (const std::string& a : arrays_) p.bind(a + "}");
}

Status PgConn::begin() {
  if (PQstatus(conn_) != CONNECTION_OK) {
    if (Status s = connect(); !s) return s;
  }
  Status s = exec("BEGIN", "begin");
  if (!s && conn_ == nullptr) {  // lost since the last statement: nothing to undo yet
    if (Status c = connect(); !c) return c;
    s = exec("BEGIN", "begin");
  }
  in_tx_ = s.is_ok();
  return s;
}

Status PgConn::commit() {
  Status s = drain();  // the transaction's writes in flight: a failure among them fails it
  if (s) s = exec("COMMIT", "commit");
  in_tx_ = false;
  one_by_one_ = false;
  return s;
}

void PgConn::rollback() {
  (void)drain();
  in_tx_ = false;
  one_by_one_ = false;
  if (PQstatus(conn_) == CONNECTION_OK) (void)exec("ROLLBACK", "rollback");
}

Status PgConn::connect() {
  disconnect();
  // A transaction left open by a host that lost its link (its locks on its hosts row hold
  // off the other hosts' declaring it dead) is ended by the server after 5 s: the journal's
  // transactions never wait on the loop between statements.
  PgKeywords kw("corral", "-c idle_in_transaction_session_timeout=5000", url_);
  conn_ = PQconnectdbParams(kw.key_array(), kw.value_array(), 1);
  if (conn_ == nullptr) {
    const std::string& why = pq_load_failure();
    return io_error("journal " + label_ + ": " + (why.empty() ? "out of memory" : why));
  }
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn_);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    disconnect();
    return io_error("journal " + label_ + ": cannot connect: " + msg);
  }
  (void)PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);  // "already exists"
  return Status::ok();
}

void PgConn::disconnect() {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
  prepared_.clear();
  piping_ = false;
  in_flight_.clear();
  piped_prepares_.clear();
}

// Outside a transaction, a connection lost earlier is made again for the next statement (a
// read after the database restarted); inside one, the statement fails and the journal's
// next begin() connects.
Status PgConn::ensure_connected(const char* what) {
  if (conn_ != nullptr) return Status::ok();
  if (in_tx_) return lost(what);
  return connect();
}

// A statement without parameters, possibly several (a migration).
Status PgConn::exec(const std::string& text, const char* what) {
  if (Status s = drain(); !s) return s;
  if (Status s = ensure_connected(what); !s) return s;
  PgResult r(PQexec(conn_, text.c_str()));
  return check(r, what);
}

// A write. Inside a batch's transaction it is pipelined (sent without waiting for its
// answer, which commit() reads with the others); elsewhere it runs at once.
Status PgConn::run(const std::string& text, const Params& p, const char* what) {
  if (in_tx_ && !one_by_one_ && pipeline_) return send(text, p, what);
  auto r = query(text, p, what);
  return r ? Status::ok() : r.status();
}

// The name `text` is prepared under, preparing it (in the pipeline when piping) if needed.
Result<std::string> PgConn::prepared(const std::string& text, const char* what) {
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

Status PgConn::send(const std::string& text, const Params& p, const char* what) {
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
Status PgConn::drain() {
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
Result<PgResult> PgConn::query(const std::string& text, const Params& p, const char* what) {
  auto r = query_once(text, p, what);
  bool read = text.rfind("SELECT", 0) == 0;
  if (!r && read && !in_tx_ && conn_ == nullptr) r = query_once(text, p, what);
  return r;
}

Result<PgResult> PgConn::query_once(const std::string& text, const Params& p, const char* what) {
  if (Status s = drain(); !s) return s;  // a read sees the writes sent before it
  if (Status s = ensure_connected(what); !s) return s;
  auto name = prepared(text, what);
  if (!name) return name.status();
  std::vector<const char*> values = p.pointers();
  PgResult r(PQexecPrepared(conn_, name->c_str(), p.size(), values.data(), nullptr, nullptr, 0));
  if (Status s = check(r, what); !s) return s;
  return r;
}

Status PgConn::check(const PgResult& r, const char* what) {
  ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Status::ok();
  if (PQstatus(conn_) != CONNECTION_OK) return lost(what);
  const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
  const char* primary = r ? PQresultErrorField(r.get(), PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string text = std::string(what) + ": " + (primary ? primary : PQerrorMessage(conn_));
  if (bad_values(state)) return invalid_argument(text);
  return io_error("journal " + label_ + ": " + text);
}

// The connection broke: the call fails as one to try again, and the next begin() reconnects.
Status PgConn::lost(const char* what) {
  std::string msg = conn_ != nullptr ? PQerrorMessage(conn_) : "not connected";
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  disconnect();
  return io_error("journal " + label_ + ": " + what + ": connection lost: " + msg);
}

}  // namespace corral::master::journal
