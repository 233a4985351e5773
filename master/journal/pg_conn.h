// One blocking libpq connection for the PostgreSQL journal (pg_store.cc), used by one thread
// at a time: statements prepared once per connection, with `?` numbered $1, $2, ... and every
// parameter sent as text (made valid UTF-8 without NUL: other bytes become U+FFFD).
//  - Inside a transaction (begin() to commit()), writes (run()) are sent in libpq's pipeline
//    mode: their answers are read back every kPipelineDepth writes, before any other
//    statement, and at commit(), whose result is then the first failure among them. After
//    one_by_one() (a transaction of savepoints), each write waits for its answer.
//  - A lost connection fails the call with kIo. Outside a transaction the next statement
//    connects again; begin(), or a read (SELECT) outside a transaction, that finds the
//    connection lost connects again and tries once more.
//  - A failure names the statement (`what`) and the server's message: kInvalidArgument when
//    the statement's values are wrong (SQLSTATE classes 22, 23, 54: it would fail again on any
//    database), else kIo naming the database.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shared/status.h"

namespace corral::master::journal {

// One statement's parameters, as text.
class Params {
 public:
  Params& bind(const std::string& v);
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

// Many rows' parameters as one PostgreSQL array per column (`{"a","b"}`, `{1,2}`), for a
// statement that unnests them into rows (sql::upsert_many): bind a row's values in column
// order, then next_row(); bind_to() adds the arrays to a statement's parameters.
class ArrayParams {
 public:
  ArrayParams& bind(const std::string& v);
  ArrayParams& bind(int64_t v);
  void next_row() { column_ = 0; }
  void bind_to(Params& p) const;

 private:
  std::string& column();  // the current column's array, opened on the first row

  std::vector<std::string> arrays_;
  size_t column_ = 0;
};

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

// A column of a row of `r`: text ("" for NULL), or a number (0 for NULL).
inline std::string col_text(const PgResult& r, int row, int col) {
  if (PQgetisnull(r.get(), row, col)) return "";
  return std::string(PQgetvalue(r.get(), row, col),
                     static_cast<size_t>(PQgetlength(r.get(), row, col)));
}
inline int64_t col_i64(const PgResult& r, int row, int col) {
  if (PQgetisnull(r.get(), row, col)) return 0;
  return std::strtoll(PQgetvalue(r.get(), row, col), nullptr, 10);
}

// A row of a result, read as the journal's tables read rows (columns.h): columns by name.
struct PgCells {
  const PgResult& result;
  int row;

  int column(const char* name) const { return PQfnumber(result.get(), name); }
  int64_t i64(int col) const { return col_i64(result, row, col); }
  std::string text(int col) const { return col_text(result, row, col); }
};

class PgConn {
 public:
  // `label`: how messages name the database (its password hidden). Connects at connect().
  PgConn(std::string url, std::string label, bool pipeline)
      : url_(std::move(url)), label_(std::move(label)), pipeline_(pipeline) {}
  ~PgConn() { disconnect(); }
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  const std::string& label() const { return label_; }
  bool in_tx() const { return in_tx_; }

  Status connect();
  Status begin();
  Status commit();
  void rollback();  // nothing to do when no transaction is open
  // The rest of this transaction waits for each write's answer (the journal runs a batch
  // write by write, with savepoints, to find a wrong one).
  void one_by_one() { one_by_one_ = true; }

  // A statement without parameters, possibly several (a migration, BEGIN, a savepoint).
  Status exec(const std::string& text, const char* what);
  // A write (pipelined inside a transaction, see above).
  Status run(const std::string& text, const Params& p, const char* what);
  // A statement whose rows are wanted, answered at once.
  Result<PgResult> query(const std::string& text, const Params& p, const char* what);

 private:
  static constexpr size_t kPipelineDepth = 1000;

  void disconnect();
  Status ensure_connected(const char* what);
  Result<std::string> prepared(const std::string& text, const char* what);
  Status send(const std::string& text, const Params& p, const char* what);
  Status drain();
  Result<PgResult> query_once(const std::string& text, const Params& p, const char* what);
  Status check(const PgResult& r, const char* what);
  Status lost(const char* what);

  std::string url_;
  std::string label_;
  bool pipeline_;  // writes inside transactions are pipelined
  PGconn* conn_ = nullptr;
  bool in_tx_ = false;       // between begin() and commit() or rollback()
  bool one_by_one_ = false;  // this transaction runs with savepoints: no pipelining
  std::map<std::string, std::string> prepared_;  // statement text -> its name
  uint64_t statements_ = 0;                      // prepared here, for unique names
  bool piping_ = false;                          // in libpq's pipeline mode, with in_flight_ sent
  std::vector<const char*> in_flight_;           // what each statement sent is, answers not read
  std::vector<std::string> piped_prepares_;      // statements prepared in the pipeline
};

}  // namespace corral::master::journal
