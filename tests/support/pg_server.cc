#include "tests/support/pg_server.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <catch2/catch.hpp>

namespace corral::test {
namespace {

struct Conn {
  explicit Conn(const std::string& url) : c(PQconnectdb(url.c_str())) {}
  ~Conn() { PQfinish(c); }
  PGconn* c;
};

// Runs `text` on `url`; the first column of the first row, or the error as "error: ...".
std::string run(const std::string& url, const std::string& text, bool* ok) {
  Conn conn(url);
  if (PQstatus(conn.c) != CONNECTION_OK) {
    *ok = false;
    return std::string("error: cannot connect to ") + url + ": " + PQerrorMessage(conn.c);
  }
  PGresult* r = PQexec(conn.c, text.c_str());
  ExecStatusType st = PQresultStatus(r);
  *ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
  std::string out;
  if (!*ok) {
    out = std::string("error: ") + PQresultErrorMessage(r);
  } else if (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0) {
    out = PQgetvalue(r, 0, 0);
  }
  PQclear(r);
  return out;
}

}  // namespace

PgPrivateServer::PgPrivateServer() : PgPrivateServer("", "") {}

PgPrivateServer::PgPrivateServer(const std::string& host, const std::string& netns) {
  char pattern[] = "/tmp/corral-pg-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return;
  dir_ = pattern;
  std::string cmd = std::string(CORRAL_SOURCE_DIR) + "/tools/pg-test-server start " + dir_;
  if (!host.empty()) cmd += " " + host + " " + netns;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) url_ += buf;
  if (::pclose(p) != 0) url_.clear();
  while (!url_.empty() && url_.back() == '\n') url_.pop_back();
}

PgPrivateServer::~PgPrivateServer() {
  if (dir_.empty()) return;
  std::string cmd =
      std::string(CORRAL_SOURCE_DIR) + "/tools/pg-test-server stop " + dir_ + " >/dev/null 2>&1";
  (void)std::system(cmd.c_str());
}

void PgPrivateServer::tool(const std::string& verb) {
  std::string cmd = std::string(CORRAL_SOURCE_DIR) + "/tools/pg-test-server " + verb + " " + dir_;
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
}

void PgPrivateServer::down() { tool("down"); }
void PgPrivateServer::up() { tool("up"); }
void PgPrivateServer::kill() { tool("kill"); }

const std::string& pg_server_url() {
  static const std::string url = [] {
    const char* env = std::getenv("CORRAL_TEST_PG");
    if (env != nullptr && *env != '\0') return std::string(env);
    static PgPrivateServer own;  // stopped at exit
    return own.url();
  }();
  return url;
}

PgDatabase::PgDatabase(std::string server_url) : server_(std::move(server_url)) {
  const std::string& server = server_;
  REQUIRE_FALSE(server.empty());  // tools/pg-test-server could not start a server
  static std::atomic<int> next{0};
  name_ = "corral_test_" + std::to_string(::getpid()) + "_" + std::to_string(next++);
  bool ok = false;
  std::string out = run(server, "CREATE DATABASE " + name_, &ok);
  INFO(out);
  REQUIRE(ok);
  // The server's URL names the "postgres" database: the same server, this database.
  std::string::size_type slash = server.find('/', server.find("://") + 3);
  std::string::size_type query = server.find('?');
  url_ = server.substr(0, slash + 1) + name_ + (query == std::string::npos ? "" : server.substr(query));
}

PgDatabase::~PgDatabase() {
  bool ok = false;
  (void)run(server_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)", &ok);
}

std::string PgDatabase::sql(const std::string& text) const {
  bool ok = false;
  std::string out = run(url_, text, &ok);
  INFO(text << "\n" << out);
  REQUIRE(ok);
  return out;
}

}  // namespace corral::test
