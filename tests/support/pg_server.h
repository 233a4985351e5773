// PostgreSQL for tests: the server tools/test started for the whole suite (its URL in
// CORRAL_TEST_PG), else one this test program starts with tools/pg-test-server the first time
// it is asked for, and stops when it exits. Each test takes a fresh database of its own.
#pragma once

#include <string>

namespace corral::test {

// The URL of the server's "postgres" database, as libpq takes it.
const std::string& pg_server_url();

// A server of its own (tools/pg-test-server), for a test that stops it: removed when this goes
// away. url() is "" when it could not start.
class PgPrivateServer {
 public:
  PgPrivateServer();
  // Listening on TCP at `host`:5432 in network namespace `netns` (tests/support/harness_netns.h).
  PgPrivateServer(const std::string& host, const std::string& netns);
  ~PgPrivateServer();
  PgPrivateServer(const PgPrivateServer&) = delete;
  PgPrivateServer& operator=(const PgPrivateServer&) = delete;

  const std::string& url() const { return url_; }
  // Stops the server (a fast shutdown: clients are cut off, committed data is kept), or starts
  // it again. Fail the test when the tool fails.
  void down();
  void up();
  // Kills it with SIGKILL, every process of it (a crash); up() recovers it.
  void kill();

 private:
  void tool(const std::string& verb);
  std::string dir_, url_;
};

// A fresh, empty database on that server (or on `server`, a URL like pg_server_url()'s),
// dropped (with its connections) when this goes away.
class PgDatabase {
 public:
  PgDatabase() : PgDatabase(pg_server_url()) {}
  explicit PgDatabase(std::string server);
  ~PgDatabase();
  PgDatabase(const PgDatabase&) = delete;
  PgDatabase& operator=(const PgDatabase&) = delete;

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }
  // Runs `text` on this database; returns the first column of its first row ("" for none).
  // Fails the test (REQUIRE) when the statement fails.
  std::string sql(const std::string& text) const;

 private:
  std::string server_, name_, url_;
};

}  // namespace corral::test
