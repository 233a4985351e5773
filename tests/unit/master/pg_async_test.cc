// The master's non-blocking PostgreSQL connection: queries in order with their parameters,
// a failed query that leaves the connection usable, a deadline, a connection killed under it,
// and a host that does not resolve.
#include "master/cluster/pg_async.h"

#include <catch2/catch.hpp>

#include <functional>
#include <optional>

#include "shared/proc.h"
#include "tests/support/pg_server.h"
#include "tests/support/test_loop.h"

using corral::Code;
using corral::Result;
using corral::master::cluster::PgAsync;
using corral::master::cluster::PgRows;
using corral::test::PgDatabase;

namespace {

using Loop = corral::test::TestLoop;

// The first column of the first row, or "error: <message>".
std::string first(const Result<PgRows>& r) {
  if (!r) return "error: " + r.status().message();
  return r->rows.empty() ? "" : r->rows[0][0];
}

}  // namespace

TEST_CASE("pg async: queries answer in the order they were asked, with their parameters") {
  PgDatabase db;
  Loop l;
  {
    PgAsync pg(&l.loop, db.url(), "test");
    std::vector<std::string> got;
    for (int i = 0; i < 5; ++i) {
      pg.query("SELECT CAST($1 AS INTEGER) * 2, $2", {std::to_string(i), "ü"},
               [&](Result<PgRows> r) { got.push_back(first(r) + "/" + (r ? r->rows[0][1] : "")); });
    }
    CHECK(got.empty());  // never from inside query()
    REQUIRE(l.run_until([&] { return got.size() == 5; }));
    CHECK(got == std::vector<std::string>{"0/ü", "2/ü", "4/ü", "6/ü", "8/ü"});
    CHECK(pg.connected());
  }
}

TEST_CASE("pg async: queries asked together share one round trip, each its own transaction") {
  PgDatabase db;
  Loop l;
  {
    PgAsync pg(&l.loop, db.url(), "test");
    std::vector<std::string> got;
    auto keep = [&](Result<PgRows> r) { got.push_back(first(r)); };
    pg.query("CREATE TABLE t (v INTEGER)", {}, keep);
    pg.query("INSERT INTO t VALUES (1) RETURNING v", {}, keep);
    pg.query("INSERT INTO t VALUES ('not a number')", {}, keep);  // fails alone
    pg.query("INSERT INTO t VALUES (3) RETURNING v", {}, keep);
    pg.query("SELECT CAST(SUM(v) AS TEXT) FROM t", {}, keep);
    REQUIRE(l.run_until([&] { return got.size() == 5; }));
    CHECK(got[1] == "1");
    CHECK_THAT(got[2], Catch::StartsWith("error: database test: invalid input syntax"));
    CHECK(got[3] == "3");
    CHECK(got[4] == "4");  // the failed insert undid neither of the others
    CHECK(pg.round_trips() == 1);
    CHECK(pg.queries() == 5);
    // Asked after the answers came: a round trip of its own.
    pg.query("SELECT 1", {}, keep);
    REQUIRE(l.run_until([&] { return got.size() == 6; }));
    CHECK(pg.round_trips() == 2);
  }
}

TEST_CASE("pg async: a failed query names the database, and the next one runs") {
  PgDatabase db;
  Loop l;
  {
    PgAsync pg(&l.loop, db.url(), "postgresql://test");
    std::vector<std::string> got;
    pg.query("SELECT * FROM no_such_table", {}, [&](Result<PgRows> r) {
      CHECK(r.status().code() == Code::kIo);
      got.push_back(first(r));
    });
    pg.query("SELECT 42", {}, [&](Result<PgRows> r) { got.push_back(first(r)); });
    REQUIRE(l.run_until([&] { return got.size() == 2; }));
    CHECK(got[0] == "error: database postgresql://test: relation \"no_such_table\" does not exist");
    CHECK(got[1] == "42");
  }
}

TEST_CASE("pg async: a query past its deadline fails, the connection is reset, the next one runs") {
  PgDatabase db;
  Loop l;
  {
    PgAsync pg(&l.loop, db.url(), "test");
    std::optional<Result<PgRows>> slow;
    uint64_t start = corral::monotonic_ms();
    pg.query("SELECT pg_sleep(5)", {}, [&](Result<PgRows> r) { slow = std::move(r); }, 300);
    REQUIRE(l.run_until([&] { return slow.has_value(); }));
    CHECK(corral::monotonic_ms() - start < 4000);
    CHECK(slow->status().code() == Code::kTimeout);
    std::string next;
    pg.query("SELECT 'again'", {}, [&](Result<PgRows> r) { next = first(r); });
    REQUIRE(l.run_until([&] { return !next.empty(); }));
    CHECK(next == "again");
  }
}

TEST_CASE("pg async: a connection killed under it fails its query, and the next query reconnects") {
  PgDatabase db;
  Loop l;
  {
    PgAsync pg(&l.loop, db.url(), "test");
    std::string pid;
    pg.query("SELECT pg_backend_pid()", {}, [&](Result<PgRows> r) { pid = first(r); });
    REQUIRE(l.run_until([&] { return !pid.empty(); }));
    // pg_terminate_backend only signals the backend: wait until it is gone.
    db.sql("SELECT pg_terminate_backend(" + pid + ", 5000)");
    std::optional<Result<PgRows>> lost;
    pg.query("SELECT 1", {}, [&](Result<PgRows> r) { lost = std::move(r); });
    REQUIRE(l.run_until([&] { return lost.has_value(); }));
    CHECK(lost->status().code() == Code::kIo);
    std::string again;
    pg.query("SELECT pg_backend_pid()", {}, [&](Result<PgRows> r) { again = first(r); });
    REQUIRE(l.run_until([&] { return !again.empty(); }));
    CHECK(again != pid);
    CHECK(again.rfind("error", 0) != 0);
  }
}

TEST_CASE("pg async: a host name that does not resolve fails the query, naming the host") {
  Loop l;
  {
    PgAsync pg(&l.loop, "postgresql://corral@no-such-host.invalid/db", "db");
    std::string got;
    pg.query("SELECT 1", {}, [&](Result<PgRows> r) { got = first(r); });
    REQUIRE(l.run_until([&] { return !got.empty(); }));
    CHECK_THAT(got, Catch::StartsWith("error: database db: cannot resolve no-such-host.invalid"));
  }
}

TEST_CASE(
    "pg async: notifications on a channel it listens to reach it while idle, and after a "
    "reconnect") {
  PgDatabase db;
  Loop l;
  {
    PgAsync pg(&l.loop, db.url(), "test");
    std::vector<std::string> got;
    pg.listen("corral_test", [&](const std::string& payload) { got.push_back(payload); });
    std::string pid;
    pg.query("SELECT pg_backend_pid()", {}, [&](Result<PgRows> r) { pid = first(r); });
    REQUIRE(l.run_until([&] { return !pid.empty(); }));
    pg.query("SELECT pg_notify('corral_test', 'its own')", {}, [](Result<PgRows>) {});
    db.sql("NOTIFY corral_test, 'one'");
    db.sql("NOTIFY other_channel, 'not this one'");
    REQUIRE(l.run_until([&] { return got.size() == 1; }));
    CHECK(got[0] == "one");
    CHECK(pg.waiting() == 0);  // it came with nothing asked
    // The connection goes (a query on it may fail first); a query connects again, and the
    // connection listens again.
    db.sql("SELECT pg_terminate_backend(" + pid + ", 5000)");
    std::string again;
    for (int i = 0; i < 3 && again != "again"; ++i) {
      again.clear();
      pg.query("SELECT 'again'", {}, [&](Result<PgRows> r) { again = first(r); });
      REQUIRE(l.run_until([&] { return !again.empty(); }));
    }
    REQUIRE(again == "again");
    db.sql("NOTIFY corral_test, 'two'");
    REQUIRE(l.run_until([&] { return got.size() == 2; }));
    CHECK(got[1] == "two");
  }
}
