// The cluster on a real network: PostgreSQL, the job API and three daemons each in a network
// namespace of its own (tests/support/harness_netns.h), partitioned while a run polls. Every
// instance is checked at the end: passed, each step recorded once, each job created once.
// Skipped, not passed, where this machine cannot make network namespaces.
#include <catch2/catch.hpp>

#include <thread>

#include "tests/support/harness_cluster.h"
#include "tests/support/harness_netns.h"

namespace corral::test {
namespace {

// The database, the job API and three hosts, each in its own namespace.
struct NetTrio {
  Netns net{{"db", "target", "h1", "h2", "h3"}};
  PgPrivateServer pg{net.addr("db"), net.ns("db")};
  Trio t{pg.url(), net.ns("target"), net.addr("target"), [this](int i) {
           const std::string h = "h" + std::to_string(i + 1);
           return DaemonOptions().in_netns(net.ns(h), net.addr(h));
         }};
};

// Which host holds each range of the run, as one text.
std::string holders(const Trio& t, const std::string& id) {
  return t.db.sql(
      "SELECT string_agg(host || ':' || lo, ',' ORDER BY lo) FROM "
      "claims WHERE run_id = '" +
      id + "'");
}

}  // namespace

TEST_CASE(
    "partition: a host cut off from the other hosts but not from the database changes nothing") {
  if (std::string why = Netns::unavailable(); !why.empty()) {
    WARN("SKIPPED: " << why);
    return;
  }
  NetTrio n;
  Trio& t = n.t;
  const int instances = 300;
  const std::string id = t.submit(instances, 16000);
  const std::string before = holders(t, id);
  // h1 can reach neither h2 nor h3 (nor they it), but all three reach the database and the
  // job API. Hosts coordinate only through the database: for longer than a dead host's 5 s,
  // each sees the others alive, and no range changes hands.
  n.net.split("h1", "h2");
  n.net.split("h1", "h3");
  const auto until = std::chrono::steady_clock::now() + seconds(8);
  while (std::chrono::steady_clock::now() < until) {
    for (auto& d : t.d) {
      for (const auto& [host, row] : hosts_of(*d)) {
        INFO(row.dump());
        CHECK(row["state"] == "alive");
      }
    }
    std::this_thread::sleep_for(milliseconds(500));  // a sample every half second, not a wait
  }
  CHECK(holders(t, id) == before);
  n.net.join("h1", "h2");
  n.net.join("h1", "h3");
  wait_run_finished(*t.d[0], id, seconds(60));
  t.check_each_step_once(id, instances);
  CHECK(t.db.sql("SELECT MAX(resumes) FROM instances WHERE run_id = '" + id + "'") == "0");
  CHECK(t.api.stats()["jobs"] == instances);  // each job created once
}

}  // namespace corral::test
