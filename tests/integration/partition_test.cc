// The cluster on a real network: PostgreSQL, the job API and three daemons each in a network
// namespace of its own (tests/support/harness_netns.h), partitioned while a run polls. Every
// instance is checked at the end: passed, each step recorded once, each job created once.
// Skipped, not passed, where this machine cannot make network namespaces.
#include <catch2/catch.hpp>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <functional>
#include <iomanip>
#include <set>
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

// The database, the job API and three hosts, each in its own namespace. `tweak` may add to a
// host's options (by its index).
struct NetTrio {
  using Tweak = std::function<void(int, DaemonOptions&)>;
  explicit NetTrio(Tweak tweak_hosts = nullptr) : tweak(std::move(tweak_hosts)) {}

  Tweak tweak;
  Netns net{{"db", "target", "h1", "h2", "h3"}};
  PgPrivateServer pg{net.addr("db"), net.ns("db")};
  Trio t{pg.url(), net.ns("target"), net.addr("target"), [this](int i) {
           const std::string h = "h" + std::to_string(i + 1);
           DaemonOptions o = DaemonOptions().in_netns(net.ns(h), net.addr(h));
           if (tweak) tweak(i, o);
           return o;
         }};
};

// This test's wall clock, Unix ms (not shared/proc.h's, which a test hook may step).
int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// Each host's epoch, as host 0 lists them.
std::vector<int64_t> epochs_of(Trio& t) {
  std::vector<int64_t> epochs;
  for (const std::string& host : t.ids) epochs.push_back(hosts_of(*t.d[0])[host]["epoch"]);
  return epochs;
}

// Milliseconds since `t`.
int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t).count();
}

// "2026-12-07T04:59:20..." as Unix seconds, read as UTC; -1 when it is not such a time.
int64_t utc_seconds(const std::string& text) {
  std::tm tm{};
  std::istringstream at(text.substr(0, 19));
  at >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  return at.fail() ? -1 : static_cast<int64_t>(timegm(&tm));
}

// The time (Unix ms) of the first line of `log` that holds `text`; 0 when none does.
int64_t log_time(const std::string& log, const std::string& text) {
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find(text) == std::string::npos) continue;
    // "2026-12-07T04:59:20.037+00:00 master[...] ...": the local time, and its offset from UTC.
    const int64_t local_s = utc_seconds(line);
    if (local_s < 0) return 0;
    const int64_t offset_s = (std::stoi(line.substr(24, 2)) * 60 + std::stoi(line.substr(27, 2))) *
                             60 * (line[23] == '-' ? -1 : 1);
    return (local_s - offset_s) * 1000 + std::stoi(line.substr(20, 3));
  }
  return 0;
}

// Each host's epoch, as one text.
std::string epochs_text(Trio& t) {
  std::string out;
  for (int64_t e : epochs_of(t)) out += (out.empty() ? "" : " ") + std::to_string(e);
  return out;
}

// Which host holds each range of the run, as one text.
// Every host's worker reports its `n` instances: the workers' count comes with their
// heartbeat, a moment after the journal says the instances run.
void wait_active(Trio& t, int n) {
  for (auto& d : t.d) {
    d->wait_until([&] { return d->worker(0)["active"] == n; }, seconds(10),
                  "the worker to report its instances");
  }
}

// A load test over every host, submitted to host `origin`: 2 VUs a host polling the job API's
// /delay every 100 ms for `duration`. Returns its id once the origin counts every host's VUs.
std::string spread_load(Trio& t, size_t origin, const std::string& duration) {
  Json scenario = {
      {"name", "spread"},
      {"vars", {{"base", t.api.base()}}},
      {"steps", Json::array({{{"name", "get"}, {"request", {{"url", "{{base}}/delay?ms=1"}}}}})}};
  Json load = {{"vus", 6}, {"duration", duration}, {"pace", "100ms"}, {"hosts", "all"}};
  auto started =
      t.d[origin]->api("POST", "/loads", Json{{"scenario", scenario}, {"load", load}}.dump());
  REQUIRE(started.status == 201);
  const std::string id = started.json["load"];
  t.d[origin]->wait_until([&] { return t.d[origin]->api("GET", "/loads/" + id).json["vus"] == 6; },
                          seconds(20), "the origin to count the VUs of every host");
  return id;
}

// The host of `t` that is load test `id`'s origin now (its GET /loads/<id> has no
// cluster.origin), among those but `except`; -1 if none is.
int origin_of(Trio& t, const std::string& id, size_t except) {
  for (size_t i = 0; i < t.d.size(); ++i) {
    if (i == except) continue;
    auto r = t.d[i]->try_api("GET", "/loads/" + id);
    if (r && r->status == 200 && r->json["cluster"]["origin"].is_null()) return static_cast<int>(i);
  }
  return -1;
}

std::string holders(const Trio& t, const std::string& id) {
  return t.db.sql(
      "SELECT string_agg(host || ':' || lo, ',' ORDER BY lo) FROM "
      "claims WHERE run_id = '" +
      id + "'");
}

}  // namespace

TEST_CASE(
    "partition: a host cut off from the other hosts but not from the database changes nothing",
    "[partition]") {
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
    "and it rejoins",
    "[partition]") {
  if (skipped()) return;
  NetTrio n;
  Trio& t = n.t;
  const std::string id = t.submit(kInstances, 20000);
  const std::string victim = t.ids[0];
  const int64_t epoch = hosts_of(*t.d[1])[victim]["epoch"];
  // The cut host is also the origin of a load test over every host.
  const std::string load = spread_load(t, 0, "30s");
  n.net.cut("h1");
  const auto cut = std::chrono::steady_clock::now();
  auto since_cut = [&] { return ms_since(cut); };
  // Cut off, it stops the instances it holds (its unix socket still answers the test). Its
  // share of the load test, 2 VUs, runs on: load tests are not fenced (docs/cluster.md).
  t.d[0]->wait_until([&] { return t.d[0]->worker(0)["active"] == 2; }, seconds(15),
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
  // The database dropped the cut host's sessions itself (each session sets the server's
  // keepalives and tcp_user_timeout): left, each would hold a connection slot, and any lock of
  // its transaction, until the server's kernel gave up on it (minutes; hours for an idle one).
  t.d[1]->wait_until(
      [&] {
        return t.db.sql("SELECT COUNT(*) FROM pg_stat_activity WHERE client_addr = '" +
                        n.net.addr("h1") + "'") == "0";
      },
      seconds(20), "the database to drop the cut host's sessions");
  WARN("the database dropped the cut host's sessions " << since_cut() << " ms after the cut");
  // Its load test goes on: a host running a share took it over.
  int heir = -1;
  t.d[1]->wait_until([&] { return (heir = origin_of(t, load, 0)) > 0; }, seconds(15),
                     "another host to take the cut host's load test over");
  while (since_cut() < 15000) std::this_thread::sleep_for(milliseconds(100));  // the cut lasts
  n.net.mend("h1");
  t.d[1]->wait_until([&] { return hosts_of(*t.d[1])[victim]["state"] == "alive"; }, seconds(20),
                     "the cut host to rejoin");
  CHECK(hosts_of(*t.d[1])[victim]["epoch"].get<int64_t>() > epoch);
  // Back, the old origin finds its test taken over and ends its copy, leaving the test alone.
  t.d[0]->wait_until(
      [&] { return t.d[0]->api("GET", "/loads/" + load).json["state"] == "stopped"; }, seconds(15),
      "the old origin to end its copy of the load test");
  CHECK_THAT(
      t.d[0]->api("GET", "/loads/" + load).json["reason"].get<std::string>(),
      Catch::Contains("host " + t.ids[heir] + " took the test over while this host was cut off"));
  CHECK(t.d[0]->api("GET", "/loads/" + load).json["cluster"]["origin"] == t.ids[heir]);
  Daemon& h = *t.d[heir];
  h.wait_until([&] { return h.api("GET", "/loads/" + load).json["state"] != "running"; },
               seconds(40), "the load test to end on its new origin");
  // The test's record is the new origin's, kept in the database under its id (the old origin
  // kept no copy under the same id), and read from there once kept.
  h.wait_until(
      [&] { return t.db.sql("SELECT host FROM load_tests WHERE id = '" + load + "'") != ""; },
      seconds(20), "the new origin to keep the load test");
  CHECK(t.db.sql("SELECT host FROM load_tests WHERE id = '" + load + "'") == t.ids[heir]);
  Json whole = h.api("GET", "/loads/" + load).json;
  INFO(whole.dump());
  CHECK(whole["state"] == "passed");
  CHECK_THAT(whole["reason"].get<std::string>(), Catch::Contains("took the test over"));
  CHECK(whole["series"].size() >= 29);
  check_whole(t, *t.d[1], id);
}

TEST_CASE("partition: the database's link down for 3 s stops nothing, and nothing is lost",
          "[partition]") {
  if (skipped()) return;
  NetTrio n;
  Trio& t = n.t;
  const std::string id = t.submit(kInstances, 12000);
  const std::vector<int64_t> epochs = epochs_of(t);
  wait_active(t, 100);
  n.net.cut("db");
  const auto cut = std::chrono::steady_clock::now();
  // Shorter than the lease: every host keeps running what it holds, and says it is degraded
  // once its heartbeat is 2 s late.
  std::set<size_t> degraded;
  int64_t oldest = 0;  // the oldest heartbeat a host said it had, in ms
  auto late_ms = [&](const Json& h) {
    if (h["status"] != "degraded") return;
    INFO(h.dump());
    const std::string error = h["cluster"].value("error", std::string());
    const std::string prefix = "no heartbeat written for ";
    CHECK_THAT(error, Catch::StartsWith(prefix));
    if (error.rfind(prefix, 0) == 0)
      oldest = std::max<int64_t>(oldest, std::stoll(error.substr(prefix.size())));
  };
  // A sample every quarter second, and the link back 3 s after the cut, not later: an outage
  // that runs over would test a longer one.
  const auto back = cut + seconds(3);
  while (std::chrono::steady_clock::now() < back) {
    for (size_t i = 0; i < t.d.size(); ++i) {
      CHECK(t.d[i]->worker(0)["active"] == 100);
      Json h = t.d[i]->health();
      late_ms(h);
      if (h["status"] == "degraded") degraded.insert(i);
    }
    std::this_thread::sleep_until(
        std::min(std::chrono::steady_clock::now() + milliseconds(250), back));
  }
  CHECK(degraded.size() == 3);
  n.net.mend("db");
  for (auto& d : t.d) {
    d->wait_until(
        [&] {
          Json h = d->health();
          late_ms(h);
          return h["status"] == "ok";
        },
        seconds(15), "the host to be ok again");
  }
  // How close the outage came to a host's lease (4 s for a host that holds instances), as
  // sampled: the heartbeat may have been a little older between two samples.
  WARN("the oldest heartbeat a host reported during the 3 s outage: " << oldest << " ms");
  CHECK(oldest < 4000);
  check_whole(t, *t.d[0], id);
  CHECK(t.db.sql("SELECT MAX(resumes) FROM instances WHERE run_id = '" + id + "'") == "0");
  CHECK(epochs_of(t) == epochs);  // none fenced, none declared dead
}

TEST_CASE(
    "partition: the database's link down for 20 s: every host stops its instances and refuses "
    "new runs, then resumes them all",
    "[partition]") {
  if (skipped()) return;
  NetTrio n;
  Trio& t = n.t;
  // Two runs: the long one's jobs outlast the outage; the quick one's end as the database goes
  // away (the cut comes as its first instances pass), so that many of them pass during the
  // lease, their writes held up until the database is back.
  const std::string slow = t.submit(kInstances, 40000);
  const std::string quick = t.submit(kInstances, 8000);
  const std::string passed = "instances WHERE state = 'passed'";
  t.d[0]->wait_until([&] { return t.count(quick, passed) != "0"; }, seconds(30),
                     "the first instance to pass");
  const int passed_at_cut = std::stoi(t.count(quick, passed));
  n.net.cut("db");
  const auto cut = std::chrono::steady_clock::now();
  // Past the lease, every host stops what it holds: none can tell whether the others took it.
  for (auto& d : t.d) {
    d->wait_until(
        [&] {
          Json h = d->health();
          return h["status"] == "degraded" && h["cluster"].contains("fenced") &&
                 d->worker(0)["active"] == 0;
        },
        seconds(15), "the host to fence itself off");
  }
  WARN("database link down -> every host stopped its instances: " << ms_since(cut) << " ms");
  // A new run is refused with the reason, not queued behind writes that cannot land.
  Json body = {{"scenario", job_poll_scenario("late", 1000, "1s")},
               {"instances", 1},
               {"vars", {{"base", t.api.base()}}}};
  auto refused = t.d[1]->api("POST", "/runs", body.dump());
  CHECK(refused.status == 503);
  CHECK_THAT(refused.body, Catch::Contains("fenced off from the cluster"));
  while (std::chrono::steady_clock::now() - cut < seconds(20)) {
    std::this_thread::sleep_for(milliseconds(100));  // the outage lasts
  }
  n.net.mend("db");
  // Back, every host first writes what it held (under its old epoch, which nobody changed),
  // then registers again; the instances it stopped are resumed from the journal, each once and
  // each where it was (its job is not created again).
  for (const std::string& id : {quick, slow}) {
    wait_run_finished(*t.d[0], id, seconds(90));
    t.check_each_step_once(id, kInstances);
  }
  CHECK(t.api.stats()["jobs"] == 2 * kInstances);
  auto with_resumes = [&](const std::string& id, int resumes) {
    return std::stoi(t.db.sql("SELECT COUNT(*) FROM instances WHERE run_id = '" + id +
                              "' AND resumes = " + std::to_string(resumes)));
  };
  CHECK(with_resumes(slow, 1) == kInstances);  // every one stopped, and resumed once
  // The quick run's instances that passed while the database was away were recorded, not run
  // again.
  const int kept = with_resumes(quick, 0);
  WARN("quick run: " << passed_at_cut << " instances passed before the cut, "
                     << kept - passed_at_cut << " during it, " << with_resumes(quick, 1)
                     << " were stopped and resumed");
  CHECK(kept + with_resumes(quick, 1) == kInstances);
  CHECK(kept > passed_at_cut);
  for (auto& d : t.d) {
    Json h = d->health();
    INFO(h.dump());
    CHECK(h["status"] == "ok");
    CHECK(h["journal"]["fenced_writes"] == 0);
  }
}

TEST_CASE(
    "partition: PostgreSQL restarted (fast shutdown), then killed with kill -9 and started "
    "again, mid-run: nothing is lost",
    "[partition]") {
  if (skipped()) return;
  NetTrio n;
  Trio& t = n.t;
  const std::string id = t.submit(kInstances, 20000);
  auto all_ok = [&] {
    for (auto& d : t.d) {
      d->wait_until([&] { return d->health()["status"] == "ok"; }, seconds(30),
                    "the host's heartbeat and journal to be ok again");
    }
  };
  // Clients are cut off; what they committed is kept.
  const auto restart = std::chrono::steady_clock::now();
  n.pg.down();
  n.pg.up();
  all_ok();
  WARN("fast restart -> every host ok again: " << ms_since(restart) << " ms; epochs "
                                               << epochs_text(t));
  // A crash: no shutdown at all; the server recovers from its log when it starts.
  const auto crash = std::chrono::steady_clock::now();
  n.pg.kill();
  n.pg.up();
  all_ok();
  WARN("kill -9 and start -> every host ok again: " << ms_since(crash) << " ms; epochs "
                                                    << epochs_text(t));
  check_whole(t, *t.d[0], id);
}

TEST_CASE(
    "partition: a host's clock stepped forward by 30 s mid-run changes nothing: leases are "
    "judged by the database's clock",
    "[partition]") {
  if (skipped()) return;
  // h1's wall clock (every process of it) jumps 30 s ahead 12 s from now: once its run runs.
  const int64_t step_at = wall_ms() + 12000;
  NetTrio n([&](int i, DaemonOptions& o) {
    if (i == 0) o.with_env("CORRAL_TEST_CLOCK_STEP", "30000@" + std::to_string(step_at));
  });
  Trio& t = n.t;
  const std::string id = t.submit(kInstances, 30000);
  const std::vector<int64_t> epochs = epochs_of(t);
  wait_active(t, 100);
  const std::string before = holders(t, id);
  // For longer than a dead host's 5 s past the step, every host lists every other alive and
  // keeps its instances.
  while (wall_ms() < step_at + 8000) {
    for (auto& d : t.d) {
      CHECK(d->worker(0)["active"] == 100);
      for (const auto& [host, row] : hosts_of(*d)) {
        INFO(row.dump());
        CHECK(row["state"] == "alive");
      }
    }
    std::this_thread::sleep_for(milliseconds(500));  // a sample every half second, not a wait
  }
  // The step did happen: a run h1 takes now is stamped 30 s ahead of this test's clock.
  const Json nap = {{"name", "nap"}, {"steps", Json::array({{{"sleep", "10ms"}}})}};
  const std::string late = post_run(*t.d[0], nap, 1);
  const std::string created = run_of(*t.d[0], late)["created_at"];  // "2026-12-07T07:35:33Z"
  REQUIRE(utc_seconds(created) > 0);
  const int64_t ahead_ms = utc_seconds(created) * 1000 - wall_ms();
  INFO(created);
  CHECK(ahead_ms > 25000);
  CHECK(ahead_ms < 35000);
  CHECK(holders(t, id) == before);
  check_whole(t, *t.d[1], id);
  CHECK(t.db.sql("SELECT MAX(resumes) FROM instances WHERE run_id = '" + id + "'") == "0");
  CHECK(epochs_of(t) == epochs);
}

}  // namespace corral::test
