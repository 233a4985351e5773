// Load tests over hosts at the database (master/cluster/load_shares.h), with two hosts on one
// loop: the other host reads its share; the seconds it sends reach the origin once each, in
// order, and stay in the database until the test ends; a stop and the test's end are seen by the
// other host; the test of an origin declared dead, or restarted, is claimed by one host running a
// share of it, with every second sent so far, or deleted when no host can claim it; an origin
// back from being cut off sees its test taken over.
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
using corral::master::cluster::ClaimedLoad;
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
    ea.second = [this](const std::string&, const std::string& host, json s) {
      CHECK(host != "host-a");  // never its own
      seconds.push_back(std::move(s));
    };
    ea.share_state = [this](const std::string&, const std::string& host, const std::string& st) {
      states[host] = st;
    };
    ea.lost = [this](const std::string& id, const std::string& origin) { lost[id] = origin; };
    a = std::make_unique<LoadShares>(&loop, pa, "host-a", std::move(ea));
    b = std::make_unique<LoadShares>(&loop, pb, "host-b", other_host(shares));
  }
  // A host running shares: its shares and its claims recorded.
  LoadShares::Events other_host(std::vector<ShareRow>& rows) {
    LoadShares::Events e;
    e.shares = [&rows](std::vector<ShareRow> r) { rows = std::move(r); };
    e.claimed = [this](ClaimedLoad c) { claimed.push_back(std::move(c)); };
    return e;
  }
  // Test `id` published by host-a, both hosts alive, and host-b's share running.
  void share_running(const std::string& id) {
    REQUIRE(publish(id).is_ok());
    REQUIRE(run_until([&] { return shares.size() == 1; }));
    host_row("host-a", false);
    host_row("host-b", false);
    b->set_state(id, "running");
    REQUIRE(run_until([&] { return shares.size() == 1 && shares[0].state == "running"; }));
  }
  // A row for `id` in the hosts table: alive, or declared dead.
  void host_row(const std::string& id, bool dead) {
    db.sql(
        "INSERT INTO hosts (id, address, started_ms, heartbeat_ms, epoch, capacity, held, "
        "fenced_ms) VALUES ('" +
        id + "', '', 0, 0, 2, 0, 0, " + (dead ? "1" : "0") +
        ") ON CONFLICT (id) DO UPDATE SET fenced_ms = excluded.fenced_ms");
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
  std::vector<ClaimedLoad> claimed;
  std::map<std::string, std::string> lost;
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
  // The origin's own seconds go to the database too, and are not read back by it.
  h.a->post("l1-aaaa", {{"second", 0}});
  // Seconds stay until the test ends (another host may take it over), and are read once.
  h.b->post("l1-aaaa", {{"second", 5}});
  REQUIRE(h.run_until([&] {
    return h.seconds.size() == 6 && h.db.sql("SELECT COUNT(*) FROM load_seconds") == "7";
  }));
  CHECK(h.seconds.back()["second"] == 5);
  CHECK(h.lost.empty());

  h.a->stop("l1-aaaa");
  REQUIRE(h.run_until([&] { return h.shares.size() == 1 && h.shares[0].stopping; }));
  h.a->forget("l1-aaaa");
  REQUIRE(h.run_until([&] { return h.shares.empty(); }));
  CHECK(h.db.sql("SELECT COUNT(*) FROM loads") == "0");
  CHECK(h.db.sql("SELECT COUNT(*) FROM load_shares") == "0");
  CHECK(h.db.sql("SELECT COUNT(*) FROM load_seconds") == "0");
}

TEST_CASE("load shares: the test of an origin declared dead is deleted when no host runs a share") {
  TwoHosts h;
  h.start();
  REQUIRE(h.publish("l2-bbbb").is_ok());
  REQUIRE(h.run_until([&] { return h.shares.size() == 1; }));
  h.b->post("l2-bbbb", {{"second", 0}});
  REQUIRE(h.run_until([&] { return h.db.sql("SELECT COUNT(*) FROM load_seconds") == "1"; }));
  // host-b's share could not run: it cannot take the test over.
  h.b->set_state("l2-bbbb", "failed: no workers");
  h.host_row("host-b", false);
  h.host_row("host-a", true);
  REQUIRE(h.run_until([&] { return h.shares.empty(); }));
  CHECK(h.claimed.empty());
  CHECK(h.db.sql("SELECT COUNT(*) FROM loads") == "0");
  CHECK(h.db.sql("SELECT COUNT(*) FROM load_shares") == "0");
  CHECK(h.db.sql("SELECT COUNT(*) FROM load_seconds") == "0");
}

TEST_CASE(
    "load shares: one host running a share claims the test of a dead origin, with every second") {
  TwoHosts h;
  std::vector<ShareRow> c_shares;
  PgAsync pc{&h.loop, h.db.url(), "test"};
  auto c = std::make_unique<LoadShares>(&h.loop, pc, "host-c", h.other_host(c_shares));
  c->start();
  h.start();
  corral::uv::Timer c_beat{&h.loop};
  c_beat.start(0, 200, [&] { c->beat(); });
  std::optional<Status> published;
  h.a->publish("l3-cccc", {{"scenario", {{"name", "s"}}}, {"load", {{"vus", 3}}}}, 1234,
               {"host-a", "host-b", "host-c"}, [&](Status s) { published = s; });
  REQUIRE(h.run_until([&] { return published.has_value(); }));
  REQUIRE(published->is_ok());
  h.originated = {"l3-cccc"};
  REQUIRE(h.run_until([&] { return h.shares.size() == 1 && c_shares.size() == 1; }));
  h.host_row("host-a", false);
  h.host_row("host-b", false);
  h.host_row("host-c", false);
  h.b->set_state("l3-cccc", "running");
  c->set_state("l3-cccc", "running");
  for (int i = 0; i < 3; ++i) {
    h.a->post("l3-cccc", {{"second", i}, {"from", "a"}});
    h.b->post("l3-cccc", {{"second", i}, {"from", "b"}});
    c->post("l3-cccc", {{"second", i}, {"from", "c"}});
  }
  REQUIRE(h.run_until([&] { return h.seconds.size() == 6; }));  // host-b's and host-c's
  h.seconds.clear();
  h.originated.clear();  // host-a is cut off: it reads nothing
  h.host_row("host-a", true);
  REQUIRE(h.run_until([&] { return h.claimed.size() == 1; }));
  // Both hosts could claim it; one did, and the other sees the new origin.
  const std::string winner = h.db.sql("SELECT origin FROM loads");
  REQUIRE((winner == "host-b" || winner == "host-c"));
  std::vector<ShareRow>& loser = winner == "host-b" ? c_shares : h.shares;
  REQUIRE(h.run_until([&] { return loser.size() == 1 && loser[0].origin == winner; }));
  CHECK_FALSE(loser[0].orphaned);
  CHECK(h.claimed.size() == 1);
  const ClaimedLoad& got = h.claimed[0];
  CHECK(got.load == "l3-cccc");
  CHECK(got.from == "host-a");
  CHECK(got.body["load"]["vus"] == 3);
  REQUIRE(got.shares.size() == 3);
  for (uint32_t i = 0; i < 3; ++i) {
    const ClaimedLoad::Share& share = got.shares[i];
    INFO(share.host);
    CHECK(share.index == i);
    CHECK(share.host == std::string("host-") + char('a' + i));
    CHECK(share.state == "running");
    REQUIRE(share.seconds.size() == 3);
    for (int s = 0; s < 3; ++s) {
      CHECK(share.seconds[static_cast<size_t>(s)]["second"] == s);
      CHECK(share.seconds[static_cast<size_t>(s)]["from"] == std::string(1, char('a' + i)));
    }
  }
  // host-a, back, reads its test once more and sees it taken over.
  h.originated = {"l3-cccc"};
  REQUIRE(h.run_until([&] { return h.lost.count("l3-cccc") == 1; }));
  CHECK(h.lost["l3-cccc"] == winner);
  // Its stop and its deletion are no longer its to make.
  h.a->stop("l3-cccc");
  h.a->forget("l3-cccc");
  REQUIRE(h.publish("l3-later").is_ok());  // answered after them, on the same connection
  CHECK(h.db.sql("SELECT origin || ' ' || stop_ms FROM loads WHERE id = 'l3-cccc'") ==
        winner + " 0");
  CHECK(h.db.sql("SELECT COUNT(*) FROM load_seconds WHERE load_id = 'l3-cccc'") == "9");
  c_beat.close();
  c.reset();
}

TEST_CASE(
    "load shares: an origin that restarts gives its tests up, and a host running a share claims "
    "them") {
  TwoHosts h;
  h.start();
  h.share_running("l4-dddd");
  h.b->post("l4-dddd", {{"second", 0}});
  // host-a restarts: its new life gives the test up.
  h.a.reset();
  h.a = std::make_unique<LoadShares>(&h.loop, h.pa, "host-a", LoadShares::Events{});
  h.a->start();
  REQUIRE(h.run_until([&] { return h.claimed.size() == 1; }));
  CHECK(h.claimed[0].from == "");
  REQUIRE(h.claimed[0].shares.size() == 2);
  CHECK(h.claimed[0].shares[0].host == "host-a");
  CHECK(h.claimed[0].shares[0].state == "failed: the host restarted during the test");
  REQUIRE(h.claimed[0].shares[1].seconds.size() == 1);
  CHECK(h.db.sql("SELECT origin FROM loads") == "host-b");
}

TEST_CASE("load shares: told of a death, a host running a share claims at once, not at its beat") {
  TwoHosts h;
  h.start();
  h.share_running("l5-eeee");
  h.beat.stop();  // no more beats: only the news of the death makes host-b look
  h.host_row("host-a", true);
  h.b->host_died();
  REQUIRE(h.run_until([&] { return h.claimed.size() == 1; }));
  CHECK(h.claimed[0].from == "host-a");
}
