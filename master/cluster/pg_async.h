// A PostgreSQL connection on the master's loop that never blocks it: libpq in non-blocking
// mode, its socket watched with uv_poll. A host name in the URL is resolved first with
// uv_getaddrinfo (libpq's own non-blocking connect would still resolve it with a blocking
// call) and handed to libpq as hostaddr, the name kept for TLS.
//
// Queries are pipelined (libpq's pipeline mode): each is sent as soon as it is asked, without
// waiting for the answers to those before it, and each is its own transaction (a sync follows
// it), so one failing does not undo the others. The server runs them in the order they were
// asked, and each gets its rows or the error in that order. Queries asked together cost one
// round trip to the database, not one each. A connection that breaks fails every query on it
// and the ones waiting, and the next query connects again.
// Loop thread only.
#pragma once

#include <libpq-fe.h>
#include <uv.h>

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shared/status.h"
#include "shared/uv/handle.h"
#include "shared/uv/timer.h"

namespace corral::master::cluster {

// A query's answer: its rows, each column as text ("" for NULL).
struct PgRows {
  std::vector<std::vector<std::string>> rows;
};

// A column's text as a number (0 when it is not one).
inline int64_t pg_i64(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

// The database's clock in Unix milliseconds, in SQL: hosts compare times on one clock.
#define CORRAL_DB_NOW "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"


class PgAsync {
 public:
  using Done = std::function<void(Result<PgRows>)>;

  // Connects at the first query. `label`: how messages name the database (no password).
  PgAsync(uv_loop_t* loop, std::string url, std::string label);
  ~PgAsync();  // queries not answered yet are dropped without their callbacks
  PgAsync(const PgAsync&) = delete;
  PgAsync& operator=(const PgAsync&) = delete;

  // Runs `sql` with `params` ($1, $2, ... as text). `done` runs later, on the loop: with the
  // rows, or kIo naming the database when the connection broke or the query failed, or
  // kTimeout when no answer came within `timeout_ms` (the connection is then reset).
  void query(std::string sql, std::vector<std::string> params, Done done,
             uint64_t timeout_ms = 5000);
  // Notifications on `channel` (PostgreSQL's LISTEN; a name of lowercase letters and '_')
  // call `fn` with their payload, on the loop, whenever they come; not those its own queries
  // sent. The connection listens from its next connect on, and again at every reconnect: what
  // is notified while it is not connected is lost.
  void listen(const std::string& channel, std::function<void(const std::string&)> fn);
  bool connected() const { return conn_ != nullptr && state_ == State::kReady; }
  // Queries asked and not answered yet.
  size_t waiting() const { return queue_.size(); }
  // Since it was made: queries answered (or failed), and round trips, each a time it sent with
  // nothing else on the way (queries sent while others were out share their round trip).
  uint64_t queries() const { return queries_; }
  uint64_t round_trips() const { return round_trips_; }

 private:
  enum class State { kIdle, kResolving, kConnecting, kReady };
  struct Query {
    std::string sql;
    std::vector<std::string> params;
    Done done;
    uint64_t timeout_ms;
  };

  void next();
  void resolve();
  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  void connect(const std::string& hostaddr);
  void step_connect();
  void send_waiting();
  void arm_deadline();
  void on_ready(int events);
  void read_results();
  void answered();
  void notified();
  void watch(int events);
  void fail_all(const Status& s);
  void reset();
  Status error(const std::string& what) const;

  uv_loop_t* loop_;
  std::string url_, label_;
  std::string host_;  // a name to resolve first; empty when libpq needs no help
  PGconn* conn_ = nullptr;
  std::unique_ptr<uv::Handle<uv_poll_t>> poll_;  // on the connection's socket, made per socket
  int fd_ = -1;
  uv::Timer timer_;  // the front query's deadline (or the connect's)
  State state_ = State::kIdle;
  uv_getaddrinfo_t* resolving_ = nullptr;
  std::deque<Query> queue_;  // its first sent_ are on the wire, in order
  size_t sent_ = 0;
  PgRows rows_;        // of the front query
  std::string failed_; // its error, once a result said so
  uint64_t queries_ = 0, round_trips_ = 0;
  std::vector<std::pair<std::string, std::function<void(const std::string&)>>> listeners_;
};

}  // namespace corral::master::cluster
