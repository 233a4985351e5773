// Daemons whose journal is one PostgreSQL database register as hosts and see each other
// (GET /cluster): heartbeats every second, ages by the database's clock, a host dead once its
// heartbeat is older than 5 s.
#include <catch2/catch.hpp>

#include <signal.h>

#include "tests/support/harness.h"
#include "tests/support/pg_server.h"

using namespace corral::test;

namespace {

// The hosts GET /cluster lists, by id.
std::map<std::string, Json> hosts_of(Daemon& d) {
  std::map<std::string, Json> out;
  Json all = d.api("GET", "/cluster").json;
  for (const Json& h : all["hosts"]) out[h["id"]] = h;
  return out;
}

}  // namespace

TEST_CASE("cluster: daemons on one database list each other, and one killed is dead after 5 s") {
  PgDatabase db;
  TempHome home_a, home_b;
  auto opts = DaemonOptions().with_workers(1).with_args({"--journal", db.url()});
  auto a = std::make_unique<Daemon>(home_a, opts);
  Daemon b(home_b, opts);
  a->wait_ready(1);
  b.wait_ready(1);
  std::string id_a, id_b;
  b.wait_until(
      [&] {
        Json self_a = a->api("GET", "/cluster").json["self"];
        Json self_b = b.api("GET", "/cluster").json["self"];
        id_a = self_a.value("id", "");
        id_b = self_b.value("id", "");
        auto seen_a = hosts_of(*a), seen_b = hosts_of(b);
        return self_a["alive"] == true && self_b["alive"] == true && seen_a.size() == 2 &&
               seen_b.size() == 2 && seen_a.count(id_b) == 1 && seen_b.count(id_a) == 1;
      },
      seconds(15), "both daemons to register and see each other");
  CHECK(id_a != id_b);
  auto seen = hosts_of(*a);
  for (const auto& [id, h] : seen) {
    INFO(h.dump());
    CHECK(h["state"] == "alive");
    CHECK(h["epoch"] == 1);
    CHECK(h["heartbeat_age_ms"].get<int64_t>() < 5000);
  }
  CHECK(seen[id_b]["address"] == b.health()["listen"]);
  CliResult table = run_cli({"status", "--cluster"}, home_b.path());
  INFO(table.describe());
  CHECK(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::Contains("* " + id_b) && Catch::Contains("  " + id_a) &&
                            Catch::Contains("2/2 hosts alive"));

  a->signal(SIGKILL);
  a->wait_exit(seconds(10));
  a.reset();
  auto killed = std::chrono::steady_clock::now();
  b.wait_until([&] { return hosts_of(b)[id_a]["state"] == "dead"; }, seconds(15),
               "the killed host to be listed dead");
  auto after = std::chrono::steady_clock::now() - killed;
  CHECK(after >= std::chrono::milliseconds(4000));  // not before its last heartbeat is 5 s old
  Json dead = hosts_of(b)[id_a];
  CHECK(dead["heartbeat_age_ms"].get<int64_t>() > 5000);
  CHECK(hosts_of(b)[id_b]["state"] == "alive");
  std::string metrics = b.api("GET", "/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("corral_cluster_hosts{state=\"alive\"} 1") &&
                          Catch::Contains("corral_cluster_hosts{state=\"dead\"} 1") &&
                          Catch::Contains("corral_cluster_heartbeat_ok 1"));

  // The same home again is the same host, registered anew: its epoch goes up.
  Daemon again(home_a, opts);
  again.wait_ready(1);
  again.wait_until([&] { return again.api("GET", "/cluster").json["self"]["epoch"] == 2; },
                   seconds(10), "the restarted host to register again");
  CHECK(again.api("GET", "/cluster").json["self"]["id"] == id_a);
}

TEST_CASE("cluster: a daemon on an SQLite journal is in no cluster") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  auto r = d.api("GET", "/cluster");
  CHECK(r.status == 404);
  CHECK_THAT(d.api("GET", "/metrics").body, !Catch::Contains("corral_cluster_"));
  CHECK_THAT(r.json["error"].get<std::string>(), Catch::Contains("not a PostgreSQL database"));
}
