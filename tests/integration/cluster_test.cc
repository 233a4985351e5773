// Daemons whose journal is one PostgreSQL database register as hosts and see each other
// (GET /cluster): heartbeats every second, ages by the database's clock, a host dead once its
// heartbeat is older than 5 s. They share runs by claiming ranges of instances; a dead host's
// ranges are taken over by the others, and a host that was only paused is fenced off.
#include <catch2/catch.hpp>

#include <signal.h>

#include <thread>

#include "tests/support/harness_cluster.h"

using namespace corral::test;


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
    CHECK(h["dead_after_ms"] == 5000);  // holding no instance, it beats once a second
  }
  CHECK(seen[id_b]["address"] == b.health()["listen"]);
  CHECK(b.health()["cluster"]["ok"] == true);

  // Idle, a host's beat is one round trip to the database: its queries are pipelined.
  auto counters = [&] {
    std::string m = b.api("GET", "/metrics").body;
    return std::make_pair(metric_sample(m, "corral_cluster_db_round_trips_total"),
                          metric_sample(m, "corral_cluster_db_queries_total"));
  };
  const auto first = counters();
  const auto since = std::chrono::steady_clock::now();
  std::pair<double, double> last;
  b.wait_until(
      [&] {
        last = counters();
        return last.first >= first.first + 3;
      },
      seconds(10), "three beats");
  const double beats =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count() + 1;
  const double trips = last.first - first.first, queries = last.second - first.second;
  WARN("idle host: " << trips << " round trips, " << queries << " queries in " << beats - 1
                     << " s");
  CHECK(trips <= beats);  // at most one a beat
  // Holding no instance, it writes its heartbeat at its beats only.
  const std::string m = b.api("GET", "/metrics").body;
  CHECK(metric_sample(m, "corral_cluster_heartbeats_total{at=\"beat\"}") >= 3);
  CHECK(metric_sample(m, "corral_cluster_heartbeats_total{at=\"between\"}") == 0);
  // Each with the beat's queries together: at least the heartbeat, the hosts, the open runs
  // and the prune mark (the sweep and the claim wait a few seconds after registering).
  CHECK(queries >= 4 * trips);
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
                          Catch::Contains("corral_cluster_heartbeat_ok 1") &&
                          Catch::Contains("corral_journal_fenced_writes_total 0"));
  CHECK(b.health()["journal"]["fenced_writes"] == 0);

  // Declared dead, its epoch went up (fencing off any late write of it).
  b.wait_until([&] { return db.sql("SELECT epoch FROM hosts WHERE id = '" + id_a + "'") == "2"; },
               seconds(5), "the dead host's epoch to go up");
  CHECK(db.sql("SELECT fenced_ms > 0 FROM hosts WHERE id = '" + id_a + "'") == "t");
  // Swept when its lease ended, not at b's next beat, and never before: the age that declares
  // it dead is the database's, from its last heartbeat to the declaration.
  CHECK_THAT(read_file(home_b.master_log()),
             Catch::Contains("cluster: host " + id_a + " has been silent for"));
  CHECK(std::stoll(db.sql("SELECT fenced_ms - heartbeat_ms FROM hosts WHERE id = '" + id_a + "'")) >
        5000);
  // The same home again is the same host, registered anew: its epoch goes up again.
  Daemon again(home_a, opts);
  again.wait_ready(1);
  again.wait_until([&] { return again.api("GET", "/cluster").json["self"]["epoch"] == 3; },
                   seconds(10), "the restarted host to register again");
  CHECK(again.api("GET", "/cluster").json["self"]["id"] == id_a);
}

TEST_CASE(
    "cluster: a host that claims more ranges than it reads at once reads them page by page, "
    "and runs each instance once") {
  PgDatabase db;
  JobApi api;
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1).with_args({"--journal", db.url()}));
  wait_registered(d);
  const std::string self = d.api("GET", "/cluster").json["self"]["id"];
  // 4,550 instances are 46 ranges, all claimed by the only host in one claim: read as pages
  // of 20, 20 and 6 ranges (ClusterMember::kRangesPerRead).
  const int n = 4550;
  std::string id = submit_run(d, job_poll_scenario("pages", 500, "1s"), n, api);
  wait_run_finished(d, id, seconds(120));
  d.wait_until([&] { return d.health()["journal"]["queued_writes"] == 0; }, seconds(20),
               "the journal to catch up");
  CHECK(db.sql("SELECT COUNT(*) FROM claims WHERE host = '" + self + "' AND run_id = '" + id +
               "'") == "46");
  check_steps_once(db, id, n);
  CHECK(api.stats()["jobs"] == n);  // no job created twice
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

TEST_CASE("cluster: three hosts share a run, and one killed has its instances resume on the others") {
  Trio t;
  const int n = 3000;
  std::string id = t.submit(n, 14000);
  // Any host lists every instance as the journal has it, wherever it runs; one instance too.
  for (auto& x : t.d) {
    Json running = x->api("GET", "/runs/" + id + "/instances?state=running&limit=10000").json;
    CHECK(running["instances"].size() == n);
    for (int i : {0, n / 2, n - 1}) {
      Json one = x->api("GET", "/runs/" + id + "/instances/" + std::to_string(i)).json;
      INFO(one.dump());
      CHECK(one["state"] == "running");
    }
  }
  const std::string victim = t.ids[1];
  std::string held = t.db.sql("SELECT COUNT(*) FROM claims WHERE host = '" + victim + "'");
  INFO("the killed host held " << held << " ranges");
  CHECK(held != "0");
  // Holding instances, it renews its heartbeat between its beats too, and may be declared dead
  // sooner.
  CHECK(t.db.sql("SELECT dead_after_ms FROM hosts WHERE id = '" + victim + "'") == "4250");
  auto between = [&] {
    return metric_sample(t.d[1]->api("GET", "/metrics").body,
                         "corral_cluster_heartbeats_total{at=\"between\"}");
  };
  const double before = between();
  t.d[1]->wait_until([&] { return between() >= before + 2; }, seconds(10),
                     "the host that holds instances to renew its heartbeat between beats");
  t.d[1]->signal(SIGKILL);
  t.d[1]->wait_exit(seconds(10));
  t.d[1].reset();
  auto killed = std::chrono::steady_clock::now();
  // Declared dead once its heartbeat is 4.25 s old; its ranges are then claimed by the others,
  // and each instance in them goes on from the journal (resume reason host_lost).
  t.d[0]->wait_until(
      [&] {
        return t.db.sql("SELECT COUNT(*) FROM claims WHERE host = '" + victim + "'") == "0" &&
               t.count(id, "instances WHERE resume_reasons LIKE '%host_lost%'") != "0" &&
               t.count(id, "instances WHERE state = 'queued'") == "0";
      },
      seconds(15), "the dead host's instances to resume elsewhere");
  auto resumed = std::chrono::steady_clock::now() - killed;
  WARN("killed -> resumed on the others: "
       << std::chrono::duration_cast<std::chrono::milliseconds>(resumed).count() << " ms");
  // One survivor declared it dead; that one woke the other (NOTIFY), which claimed at once.
  const std::string log0 = read_file(t.homes[0].master_log());
  const std::string log2 = read_file(t.homes[2].master_log());
  const std::string declared = "cluster: host " + victim + " (epoch 1) declared dead";
  const std::string woken = "cluster: host " + victim + " was declared dead by another host";
  auto has = [](const std::string& log, const std::string& line) {
    return log.find(line) != std::string::npos;
  };
  INFO(log0 << "\n---\n" << log2);
  CHECK(((has(log0, declared) && has(log2, woken)) != (has(log2, declared) && has(log0, woken))));
  CHECK(std::stoll(t.db.sql("SELECT fenced_ms - heartbeat_ms FROM hosts WHERE id = '" + victim +
                            "'")) > 4250);
  // Only instances of its ranges resumed, each once.
  CHECK(t.db.sql("SELECT MAX(resumes) FROM instances WHERE run_id = '" + id + "'") == "1");
  CHECK(t.db.sql("SELECT COUNT(DISTINCT host) FROM claims WHERE run_id = '" + id +
                 "' AND host <> ''") == "2");
  wait_run_finished(*t.d[0], id, seconds(120));
  t.check_each_step_once(id, n);
  Json counts = run_of(*t.d[2], id)["counts"];
  INFO(counts.dump());
  t.d[2]->wait_until([&] { return run_of(*t.d[2], id)["state"] == "finished"; }, seconds(10),
                     "the other host to see the run finished");
  CHECK(run_of(*t.d[0], id)["counts"]["passed"] == n);
  CHECK(run_of(*t.d[2], id)["counts"]["passed"] == n);
  // The host that ended it had the database sum up every host's rows; both list every
  // instance with its steps from the journal.
  for (size_t h : {0u, 2u}) {
    Json run = run_of(*t.d[h], id);
    INFO(run.dump());
    CHECK(run["duration_ms"]["p50"].get<int64_t>() >= 14000);
    CHECK(run["duration_ms"]["p95"] >= run["duration_ms"]["p50"]);
    CHECK(run["duration_ms"]["max"] >= run["duration_ms"]["p95"]);
    CHECK(run["failures"].empty());
    Json passed = t.d[h]->api("GET", "/runs/" + id + "/instances?state=passed&steps=true&limit=10000").json;
    REQUIRE(passed["instances"].size() == n);
    CHECK(passed["instances"][n - 1]["steps"].size() >= 2);
  }
}

TEST_CASE("cluster: a host paused past its heartbeat is fenced off: its late writes change nothing") {
  Trio t;
  const int n = 600;
  std::string id = t.submit(n, 14000);
  const std::string paused = t.ids[2];
  t.d[2]->signal(SIGSTOP);
  auto stopped = std::chrono::steady_clock::now();
  // 8 s: declared dead after 5 s, its ranges taken over meanwhile.
  t.d[0]->wait_until(
      [&] {
        return t.db.sql("SELECT COUNT(*) FROM claims WHERE host = '" + paused + "'") == "0" &&
               t.count(id, "instances WHERE state = 'queued'") == "0";
      },
      seconds(15), "the paused host's instances to resume elsewhere");
  std::this_thread::sleep_until(stopped + seconds(8));  // the pause: 8 s in all
  t.d[2]->signal(SIGCONT);
  // Woken, it finds its epoch taken, stops what it held, and registers again.
  t.d[2]->wait_until(
      [&] {
        Json self = t.d[2]->api("GET", "/cluster").json["self"];
        return self["alive"] == true && self["epoch"].get<int>() >= 3;
      },
      seconds(15), "the paused host to register again");
  wait_run_finished(*t.d[0], id, seconds(120));
  t.check_each_step_once(id, n);
  CHECK(t.db.sql("SELECT MAX(resumes) FROM instances WHERE run_id = '" + id + "'") == "1");
  INFO(t.d[2]->health()["journal"].dump());
  CHECK(t.d[2]->health()["journal"]["rejected_writes"] == 0);
  t.d[2]->wait_until([&] { return run_of(*t.d[2], id)["state"] == "finished"; }, seconds(10),
                     "the woken host to see the run finished");
}

TEST_CASE("cluster: the database stopped for 7 s mid-run: hosts stop their instances, come back, and nothing is lost") {
  PgPrivateServer server;
  REQUIRE_FALSE(server.url().empty());
  Trio t(server.url());
  const int n = 600;
  std::string id = t.submit(n, 16000);
  server.down();
  auto downed = std::chrono::steady_clock::now();
  // Past 5 s without a heartbeat, each host stops what it holds: others may have taken it.
  for (auto& x : t.d) {
    x->wait_until([&] { return x->api("GET", "/cluster").json["self"]["alive"] == false; },
                  seconds(10), "the host to stop its instances");
  }
  std::this_thread::sleep_until(downed + seconds(7));  // the outage: 7 s in all
  server.up();
  // Back together, the hosts share the work again: each claims some of it.
  t.d[0]->wait_until(
      [&] {
        return t.db.sql("SELECT COUNT(DISTINCT host) FROM claims WHERE run_id = '" + id +
                        "' AND host <> ''") == "3";
      },
      seconds(20), "the three hosts to claim a share again");
  wait_run_finished(*t.d[0], id, seconds(120));
  t.check_each_step_once(id, n);
  for (auto& x : t.d) {
    Json self = x->api("GET", "/cluster").json["self"];
    INFO(self.dump());
    CHECK(self["epoch"].get<int>() >= 2);  // registered again
    CHECK(x->health()["journal"]["ok"] == true);
  }
}

TEST_CASE("cluster: a host stopped with SIGTERM exits and leaves: the others take its instances over") {
  Trio t;
  const int n = 600;
  std::string id = t.submit(n, 12000);
  const std::string leaving = t.ids[1];
  t.d[1]->signal(SIGTERM);
  t.d[1]->wait_exit(seconds(30));  // the cluster's heartbeats do not keep it running
  t.d[1].reset();
  // It left: its epoch went up once, by itself, and its ranges were released at once (no
  // other host had to declare it dead).
  CHECK(t.db.sql("SELECT epoch || ' ' || (fenced_ms > 0) || ' ' || heartbeat_ms FROM hosts "
                 "WHERE id = '" + leaving + "'") == "2 true 0");
  CHECK(t.db.sql("SELECT COUNT(*) FROM claims WHERE host = '" + leaving + "'") == "0");
  t.d[0]->wait_until(
      [&] {
        return t.db.sql("SELECT COUNT(DISTINCT host) FROM claims WHERE run_id = '" + id +
                        "' AND host <> ''") == "2" &&
               t.count(id, "instances WHERE state = 'queued'") == "0";
      },
      seconds(20), "the others to take its instances over");
  wait_run_finished(*t.d[0], id, seconds(120));
  t.check_each_step_once(id, n);
  CHECK(t.db.sql("SELECT MAX(resumes) FROM instances WHERE run_id = '" + id + "'") == "1");

  // Pruned on one host, the run is forgotten on every host.
  t.d[2]->wait_until([&] { return run_of(*t.d[2], id)["state"] == "finished"; }, seconds(10),
                     "the other host to see the run ended");
  CHECK(t.d[0]->api("DELETE", "/runs?older_than=0s").json["pruned"] == 1);
  t.d[2]->wait_until([&] { return t.d[2]->api("GET", "/runs/" + id).status == 404; }, seconds(10),
                     "the other host to forget the pruned run");
  CHECK(t.db.sql("SELECT COUNT(*) FROM runs WHERE id = '" + id + "'") == "0");
}
