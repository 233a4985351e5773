// Daemons sharing one PostgreSQL journal, for the cluster's integration tests
// (cluster_test.cc, cluster_load_test.cc): three registered hosts, and what they list.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/harness.h"
#include "tests/support/harness_runs.h"
#include "tests/support/pg_server.h"

namespace corral::test {

// The hosts GET /cluster lists, by id.
inline std::map<std::string, Json> hosts_of(Daemon& d) {
  std::map<std::string, Json> out;
  Json all = d.api("GET", "/cluster").json;
  for (const Json& h : all["hosts"]) out[h["id"]] = h;
  return out;
}

// Waits until daemon `d` (one worker) is ready and registered as a host.
inline void wait_registered(Daemon& d) {
  d.wait_ready(1);
  d.wait_until([&] { return d.api("GET", "/cluster").json["self"]["alive"] == true; },
               seconds(15), "the daemon to register");
}

// In the journal `db`: every instance of run `id` (of n, each with two steps) passed, each step
// recorded exactly once.
inline void check_steps_once(const PgDatabase& db, const std::string& id, int n) {
  const std::string of_run = "run_id = '" + id + "'";
  INFO("instances by state: " << db.sql(
           "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, COUNT(*) AS n "
           "FROM instances WHERE " +
           of_run + " GROUP BY state) AS s"));
  INFO("not passed: " << db.sql("SELECT string_agg(idx || ' ' || state || ' ' || reason || ' ' || "
                                "resume_reasons, '; ') FROM (SELECT * FROM instances WHERE " +
                                of_run + " AND state <> 'passed' LIMIT 3) AS s"));
  CHECK(db.sql("SELECT COUNT(*) FROM instances WHERE state = 'passed' AND " + of_run) ==
        std::to_string(n));
  CHECK(db.sql("SELECT COUNT(*) FROM steps WHERE state = 'passed' AND " + of_run) ==
        std::to_string(2 * n));
  CHECK(db.sql("SELECT COUNT(*) FROM (SELECT idx, step FROM steps WHERE " + of_run +
               " GROUP BY idx, step HAVING COUNT(*) > 1) AS twice") == "0");
}

// Three daemons on one database, each with one worker, all registered.
struct Trio {
  PgDatabase db;
  JobApi api;
  TempHome homes[3];
  std::vector<std::unique_ptr<Daemon>> d;
  std::vector<std::string> ids;

  Trio() : Trio(pg_server_url()) {}
  explicit Trio(const std::string& server) : db(server) {
    start([](int) { return DaemonOptions(); });
  }
  // On a network of namespaces (tests/support/harness_netns.h): the database is `server`, the
  // job API runs in `api_netns` on `api_host`, and daemon i as `place(i)` says.
  Trio(const std::string& server, const std::string& api_netns, const std::string& api_host,
       const std::function<DaemonOptions(int)>& place)
      : db(server), api(api_netns, api_host) {
    start(place);
  }

  void start(const std::function<DaemonOptions(int)>& place) {
    for (int i = 0; i < 3; ++i) {
      auto opts = place(i).with_workers(1).with_args({"--journal", db.url()});
      d.push_back(std::make_unique<Daemon>(homes[i], opts));
    }
    for (auto& x : d) {
      wait_registered(*x);
      ids.push_back(x->api("GET", "/cluster").json["self"]["id"]);
    }
    for (auto& x : d) {
      x->wait_until([&] { return hosts_of(*x).size() == 3; }, seconds(15),
                    "the daemon to list every host");
    }
  }
  std::string count(const std::string& id, const std::string& where) const {
    return db.sql("SELECT COUNT(*) FROM " + where + (where.find(" WHERE ") == std::string::npos
                                                         ? " WHERE "
                                                         : " AND ") +
                  "run_id = '" + id + "'");
  }
  // Submits n instances polling a job done after `job_ms` every 2 s, and waits until every
  // host holds some of them and all are running.
  std::string submit(int n, int job_ms) {
    std::string id = submit_run(*d[0], job_poll_scenario("cluster", job_ms, "2s"), n, api);
    d[0]->wait_until(
        [&] {
          return db.sql("SELECT COUNT(DISTINCT host) FROM claims WHERE run_id = '" + id +
                        "' AND host <> ''") == "3" &&
                 count(id, "instances WHERE state = 'running'") == std::to_string(n);
        },
        seconds(30), "every host to claim a share and start it");
    // Each host shows the whole run, not only its share.
    for (auto& x : d) {
      x->wait_until([&] { return run_of(*x, id)["counts"]["running"] == n; }, seconds(5),
                    "the host to count the instances of every host");
      CHECK(run_of(*x, id)["state"] == "running");
    }
    return id;
  }
  // Every instance passed, each of its two steps recorded exactly once. The API answers from
  // the daemons' memory; their journals follow a moment later.
  void check_each_step_once(const std::string& id, int n) {
    for (auto& x : d) {
      if (!x) continue;
      x->wait_until([&] { return x->health()["journal"]["queued_writes"] == 0; }, seconds(20),
                    "the journal to catch up");
    }
    check_steps_once(db, id, n);
  }
};


}  // namespace corral::test
