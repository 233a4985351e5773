// Load tests over hosts at the database (master/cluster/load_shares.h), with two hosts on one
// loop: the other host reads its share; the seconds it sends reach the origin once each, in
// order, and are deleted only once the origin has them; a stop and the test's end are seen by the
// other host; the test of an origin declared dead is deleted.
#include "master/cluster/load_shares.h"

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "master/journal/store.h"
#include "shared/uv/timer.h"
#include "tests/support/pg_server.h"
#include "tests/support/test_loop.h"

using corral::Code;
using corral::Status;
using corral::master::cluster::LoadShares;
using corral::master::cluster::PgAsync;
using corral::master::cluster::ShareRow;
using corral::test::PgDatabase;
using nlohmann::json;

namespace {

// Two hosts on one database with the journal's schema, each with its own connection and a
// beat (as the hosts' beat drives them in a daemon); each host's events recorded.
struct TwoHosts {
  TwoHosts() {
    REQUIRE(corral::master::journal::open_postgresql_store(db.url()).is_ok());  // the schema
    LoadShares::Events ea;
    ea.originated = [this] { return originated; };
    ea.second = [this](const std::string& id, const std::string& host, json s) {
      CHECK(id == "l1-aaaa");
      CHECK(host == "host-b");
      seconds.push_back(std::move(s));
    };
    ea.share_state = [this](const std::string&, const std::string& host, const std::string& st) {
      states[host] = st;
    };
    LoadShares::Events eb;
    eb.shares = [this](std::vector<ShareRow> rows) { shares = std::move(rows); };
    a = std::make_unique<LoadShares>(&loop, pa, "host-a", std::move(ea));
    b = std::make_unique<LoadShares>(&loop, pb, "host-b", std::move(eb));
  }
  ~TwoHosts() {
    beat.close();
    a.reset();
    b.reset();
  }
  void start() {
    a->start();
    b->start();
    beat.start(0, 200, [this] {
      a->beat();
      b->beat();
    });
  }
  bool run_until(const std::function<bool()>& done) { return l.run_until(done); }
  Status publish(const std::string& id) {
    std::optional<Status> done;
    a->publish(id, {{"scenario", {{"name", "s"}}}, {"load", {{"vus", 2}}}}, 1234,
               {"host-a", "host-b"}, [&](Status s) { done = s; });
    REQUIRE(run_until([&] { return done.has_value(); }));
    return *done;
  }

  PgDatabase db;
  corral::test::TestLoop l;  // destroyed after the hosts, which close their handles on it
  uv_loop_t& loop = l.loop;
  PgAsync pa{&loop, db.url(), "test"}, pb{&loop, db.url(), "test"};
  corral::uv::Timer beat{&loop};
  std::unique_ptr<LoadShares> a, b;
  std::vector<std::string> originated;
  std::vector<json> seconds;
  std::map<std::string, std::string> states;
  std::vector<ShareRow> shares;
};

}  // namespace

TEST_CASE("load shares: the other host reads its share and its seconds reach the origin once, in order") {
  TwoHosts h;
  CHECK(h.publish("l1-aaaa").code() == Code::kUnavailable);  // not started
  h.start();
  REQUIRE(h.publish("l1-aaaa").is_ok());
  CHECK(h.publish("l1-aaaa").code() == Code::kAlreadyExists);
  h.originated = {"l1-aaaa"};
  REQUIRE(h.run_until([&] { return h.shares.size() == 1; }));
  const ShareRow& share = h.shares[0];
  CHECK(share.load == "l1-aaaa");
  CHECK(share.origin == "host-a");
  CHECK(share.index == 1);
  CHECK(share.hosts == 2);
  CHECK(share.start_ms == 1234);
  CHECK(share.body["load"]["vus"] == 2);
  CHECK_FALSE(share.stopping);
  CHECK(share.state == "");
  // The origin's own share is running from the start; it is not the other host's to read.
  CHECK(h.db.sql("SELECT string_agg(host || ' ' || idx || ' ' || state, ', ' ORDER BY idx) "
                 "FROM load_shares") == "host-a 0 running, host-b 1 ");

  h.b->set_state("l1-aaaa", "running");
  for (int i = 0; i < 5; ++i) h.b->post("l1-aaaa", {{"second", i}});
  REQUIRE(h.run_until([&] { return h.seconds.size() == 5 && h.states["host-b"] == "running"; }));
  for (int i = 0; i < 5; ++i) CHECK(h.seconds[static_cast<size_t>(i)]["second"] == i);
  // A second is deleted by the origin's next read, which says it has it, not by the read that
  // got it: had that answer been lost on the way, the seconds would have been read again.
  REQUIRE(h.run_until([&] { return h.db.sql("SELECT COUNT(*) FROM load_seconds") == "0"; }));
  CHECK(h.seconds.size() == 5);  // read again meanwhile, none twice
  // A second the origin had, found again (its deletion lost): deleted, not added up twice.
  h.db.sql(
      "INSERT INTO load_seconds (load_id, host, seq, body) "
      "VALUES ('l1-aaaa', 'host-b', 3, '{\"second\": 3}')");
  h.b->post("l1-aaaa", {{"second", 5}});
  REQUIRE(h.run_until([&] {
    return h.seconds.size() == 6 && h.db.sql("SELECT COUNT(*) FROM load_seconds") == "0";
  }));
  CHECK(h.seconds.back()["second"] == 5);

  h.a->stop("l1-aaaa");
  REQUIRE(h.run_until([&] { return h.shares.size() == 1 && h.shares[0].stopping; }));
  h.a->forget("l1-aaaa");
  REQUIRE(h.run_until([&] { return h.shares.empty(); }));
  CHECK(h.db.sql("SELECT COUNT(*) FROM loads") == "0");
  CHECK(h.db.sql("SELECT COUNT(*) FROM load_shares") == "0");
}

TEST_CASE("load shares: the test of an origin declared dead is deleted, and its shares are gone") {
  TwoHosts h;
  h.start();
  REQUIRE(h.publish("l2-bbbb").is_ok());
  REQUIRE(h.run_until([&] { return h.shares.size() == 1; }));
  h.b->post("l2-bbbb", {{"second", 0}});
  REQUIRE(h.run_until([&] { return h.db.sql("SELECT COUNT(*) FROM load_seconds") == "1"; }));
  // Another host declared host-a dead (hosts.fenced_ms set).
  h.db.sql("INSERT INTO hosts (id, address, started_ms, heartbeat_ms, epoch, capacity, held, "
           "fenced_ms) VALUES ('host-a', '', 0, 0, 2, 0, 0, 1)");
  REQUIRE(h.run_until([&] { return h.shares.empty(); }));
  CHECK(h.db.sql("SELECT COUNT(*) FROM loads") == "0");
  CHECK(h.db.sql("SELECT COUNT(*) FROM load_shares") == "0");
  CHECK(h.db.sql("SELECT COUNT(*) FROM load_seconds") == "0");
}
