// The cluster on a real network: PostgreSQL, the job API and three daemons each in a network
// namespace of its own (tests/support/harness_netns.h), partitioned while a run polls. Every
// instance is checked at the end: passed, each step recorded once, each job created once.
// Skipped, not passed, where this machine cannot make network namespaces.
#include <catch2/catch.hpp>

#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

#include "tests/support/harness_cluster.h"
#include "tests/support/harness_netns.h"

namespace corral::test {
namespace {

// Polling instances per test: 100 a host.
constexpr int kInstances = 300;

// Where network namespaces cannot be made, the test says why and is counted as skipped.
bool skipped() {
  const std::string why = Netns::unavailable();
  if (!why.empty()) WARN("SKIPPED: " << why);
  return !why.empty();
}

// The run is over, and whole: every instance passed, each step recorded once, each job created
// once (on the job API's count).
void check_whole(Trio& t, Daemon& d, const std::string& id) {
  wait_run_finished(d, id, seconds(90));
  t.check_each_step_once(id, kInstances);
  CHECK(t.api.stats()["jobs"] == kInstances);
}

// The database, the job API and three hosts, each in its own namespace.
struct NetTrio {
  Netns net{{"db", "target", "h1", "h2", "h3"}};
  PgPrivateServer pg{net.addr("db"), net.ns("db")};
  Trio t{pg.url(), net.ns("target"), net.addr("target"), [this](int i) {
           const std::string h = "h" + std::to_string(i + 1);
           return DaemonOptions().in_netns(net.ns(h), net.addr(h));
         }};
};

// The time (Unix ms) of the first line of `log` that holds `text`; 0 when none does.
int64_t log_time(const std::string& log, const std::string& text) {
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find(text) == std::string::npos) continue;
    std::tm tm{};  // "2026-12-07T04:59:20.037+00:00 master[...] ..."
    std::istringstream at(line.substr(0, 19));
    at >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
    if (at.fail()) return 0;
    // The local time, and its offset from UTC ("+HH:MM").
    const int64_t offset_s = (std::stoi(line.substr(24, 2)) * 60 + std::stoi(line.substr(27, 2))) *
                             60 * (line[23] == '-' ? -1 : 1);
    return (static_cast<int64_t>(timegm(&tm)) - offset_s) * 1000 + std::stoi(line.substr(20, 3));
  }
  return 0;
}

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
  if (skipped()) return;
  NetTrio n;
  Trio& t = n.t;
  const std::string id = t.submit(kInstances, 16000);
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
  check_whole(t, *t.d[0], id);
  CHECK(t.db.sql("SELECT MAX(resumes) FROM instances WHERE run_id = '" + id + "'") == "0");
}

TEST_CASE(
    "partition: a host whose link goes down for 15 s stops its instances, the others take them, "
    "and it rejoins") {
  if (skipped()) return;
  NetTrio n;
  Trio& t = n.t;
  const std::string id = t.submit(kInstances, 20000);
  const std::string victim = t.ids[0];
  const int64_t epoch = hosts_of(*t.d[1])[victim]["epoch"];
  n.net.cut("h1");
  const auto cut = std::chrono::steady_clock::now();
  auto since_cut = [&] {
    return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - cut).count();
  };
  // Cut off, it stops what it holds (its unix socket still answers the test).
  t.d[0]->wait_until([&] { return t.d[0]->worker(0)["active"] == 0; }, seconds(15),
                     "the cut host to stop its instances");
  const auto fenced_ms = since_cut();
  t.d[1]->wait_until(
      [&] { return t.db.sql("SELECT COUNT(*) FROM claims WHERE host = '" + victim + "'") == "0"; },
      seconds(15), "the others to take the cut host's ranges");
  const auto taken_ms = since_cut();
  const int64_t declared_ms =
      std::stoll(t.db.sql("SELECT fenced_ms FROM hosts WHERE id = '" + victim + "'"));
  WARN("link down -> the cut host stopped its instances: " << fenced_ms << " ms; its ranges "
                                                           << "taken: " << taken_ms << " ms");
  // Its last heartbeat written was sent before the cut: it stopped within 5 s of it, and before
  // another host declared it dead (by the database's clock, the machine's here).
  CHECK(fenced_ms <= 5000);
  const int64_t stopped_ms = log_time(t.homes[0].master_log(), "stops every instance it holds");
  CHECK(stopped_ms > 0);
  CHECK(stopped_ms < declared_ms);
  WARN("it stopped " << declared_ms - stopped_ms << " ms before it was declared dead");
  while (since_cut() < 15000) std::this_thread::sleep_for(milliseconds(100));  // the cut lasts
  n.net.mend("h1");
  t.d[1]->wait_until([&] { return hosts_of(*t.d[1])[victim]["state"] == "alive"; }, seconds(20),
                     "the cut host to rejoin");
  CHECK(hosts_of(*t.d[1])[victim]["epoch"].get<int64_t>() > epoch);
  check_whole(t, *t.d[1], id);
}

TEST_CASE("partition: the database's link down for 3 s stops nothing, and nothing is lost") {
  if (skipped()) return;
  NetTrio n;
  Trio& t = n.t;
  const std::string id = t.submit(kInstances, 12000);
  std::vector<int64_t> epochs;
  for (const std::string& host : t.ids) epochs.push_back(hosts_of(*t.d[0])[host]["epoch"]);
  n.net.cut("db");
  const auto cut = std::chrono::steady_clock::now();
  // Shorter than the lease: every host keeps running what it holds.
  while (std::chrono::steady_clock::now() - cut < seconds(3)) {
    for (auto& d : t.d) CHECK(d->worker(0)["active"] == 100);
    std::this_thread::sleep_for(milliseconds(250));  // a sample every quarter second
  }
  n.net.mend("db");
  check_whole(t, *t.d[0], id);
  CHECK(t.db.sql("SELECT MAX(resumes) FROM instances WHERE run_id = '" + id + "'") == "0");
  for (size_t i = 0; i < t.ids.size(); ++i) {
    CHECK(hosts_of(*t.d[0])[t.ids[i]]["epoch"] == epochs[i]);  // none fenced, none declared dead
  }
}

}  // namespace corral::test
