// Splitting per-target limits between workers: water-filling by demand, shares that never add
// up to more than the limit while they move (a worker may use its old share until it says it
// applied the new one), and counters that survive a worker's end.
#include "master/limit_shares.h"

#include <catch2/catch.hpp>

#include <numeric>

namespace corral::master {
namespace {

using ipc::LimitKey;
using ipc::LimitUse;
using ipc::LimitUses;

const LimitKey kKey{"", "http://a:80"};

config::TargetLimit limit(uint32_t flight, double rate = 0, uint32_t burst = 1) {
  return {"http://a:80", flight, rate, burst};
}

uint32_t flight_of(const ipc::LimitShares& t) { return t.shares.at(0).max_in_flight.value(); }

// The worker `slot` says it applies its table, with `in_flight` and `waiting` requests.
void beat(LimitShares& s, int slot, uint64_t in_flight, uint64_t waiting, uint64_t now_ms,
          uint64_t started = 0) {
  LimitUses u{s.table(slot).version, {LimitUse{kKey, in_flight, waiting, started, 0}}};
  s.report(slot, u, now_ms);
}

TEST_CASE("limit shares: water-filling gives no one more than it asks while another waits") {
  CHECK(water_fill(10, {2, 100}) == std::vector<double>{2, 8});
  CHECK(water_fill(10, {0, 0}) == std::vector<double>{5, 5});
  CHECK(water_fill(10, {1, 1}) == std::vector<double>{5, 5});  // the rest spread evenly
  CHECK(water_fill(9, {100, 100, 1}) == std::vector<double>{4, 4, 1});
  auto whole = water_fill_whole(1, {5, 5}, {false, true}, {1, 0}, 0);
  CHECK(whole == std::vector<uint32_t>{0, 1});  // the starved one gets the last unit
  whole = water_fill_whole(1, {0, 0}, {false, false}, {1, 0}, 7);
  CHECK(whole == std::vector<uint32_t>{1, 0});  // no one waits: nothing moves
  whole = water_fill_whole(7, {3, 3, 3}, {false, false, false}, {0, 0, 0}, 0);
  CHECK(std::accumulate(whole.begin(), whole.end(), 0u) == 7);
}

TEST_CASE("limit shares: a new limit is split evenly, then by demand, never over the limit") {
  LimitShares s;
  s.worker_ready(0);
  s.worker_ready(1);
  s.set_limits({{kKey, limit(10)}});
  auto sent = s.update();
  REQUIRE(sent.size() == 2);
  CHECK(flight_of(sent[0]) == 5);
  CHECK(flight_of(sent[1]) == 5);
  CHECK(sent[0].version != sent[1].version);
  // Worker 0 is busy, worker 1 idle: the split follows, but worker 0 grows only into what
  // worker 1 no longer holds.
  beat(s, 0, 5, 40, 1000);
  beat(s, 1, 0, 0, 1000);
  sent = s.update();
  REQUIRE(sent.count(1) == 1);
  CHECK(flight_of(sent[1]) == 0);
  CHECK(flight_of(s.table(0)) == 5);  // worker 1 may still use 5 until it says otherwise
  beat(s, 1, 0, 0, 2000);             // it applied 0
  sent = s.update();
  CHECK(flight_of(sent.at(0)) == 10);
}

TEST_CASE("limit shares: requests still in flight count until they end") {
  LimitShares s;
  s.worker_ready(0);
  s.worker_ready(1);
  s.set_limits({{kKey, limit(10)}});
  (void)s.update();
  beat(s, 0, 5, 5, 1000);
  beat(s, 1, 0, 0, 1000);
  (void)s.update();  // worker 1 gives its share up
  beat(s, 1, 0, 0, 2000);
  (void)s.update();  // worker 0 takes it
  beat(s, 0, 10, 0, 3000);
  REQUIRE(flight_of(s.table(0)) == 10);
  // Now worker 1 has work: worker 0's share halves at once, but its 10 are still out.
  beat(s, 1, 0, 20, 3000);
  (void)s.update();
  CHECK(flight_of(s.table(0)) == 5);
  CHECK(flight_of(s.table(1)) == 0);
  beat(s, 0, 10, 0, 4000);  // applied 5, still 10 out
  (void)s.update();
  CHECK(flight_of(s.table(1)) == 0);
  beat(s, 0, 3, 0, 5000);  // 7 of them ended
  (void)s.update();
  CHECK(flight_of(s.table(1)) == 5);
}

TEST_CASE("limit shares: the sum of shares stays within the limit however demand moves") {
  LimitShares s;
  for (int w = 0; w < 3; ++w) s.worker_ready(w);
  s.set_limits({{kKey, limit(7, 30, 6)}});
  (void)s.update();
  uint64_t now = 0;
  uint32_t seed = 1;
  for (int round = 0; round < 200; ++round) {
    now += 1000;
    for (int w = 0; w < 3; ++w) {
      seed = seed * 1103515245 + 12345;
      uint32_t cap = flight_of(s.table(w));
      // A worker acks only some rounds, and never has more in flight than it may.
      if ((seed >> 16) % 3 != 0) beat(s, w, (seed >> 8) % (cap + 1), (seed >> 4) % 20, now);
    }
    (void)s.update();
    uint32_t flights = 0;
    double rates = 0, bursts = 0;
    for (int w = 0; w < 3; ++w) {
      flights += flight_of(s.table(w));
      rates += s.table(w).shares.at(0).rate.value();
      bursts += s.table(w).shares.at(0).burst;
    }
    INFO("round " << round);
    REQUIRE(flights <= 7);
    REQUIRE(rates <= 30 + 1e-9);
    REQUIRE(bursts <= 6 + 1e-2);
  }
}

TEST_CASE("limit shares: counters survive a worker's end, and a limit that goes leaves the tables") {
  LimitShares s;
  s.worker_ready(0);
  s.set_limits({{kKey, limit(4)}});
  (void)s.update();
  beat(s, 0, 1, 2, 1000, 30);
  auto t = s.totals().at(kKey);
  CHECK(t.in_flight == 1);
  CHECK(t.waiting == 2);
  CHECK(t.started == 30);
  s.worker_gone(0);
  s.worker_ready(0);
  (void)s.update();
  beat(s, 0, 0, 0, 2000, 5);
  CHECK(s.totals().at(kKey).started == 35);
  CHECK(s.totals().at(kKey).in_flight == 0);
  s.set_limits({});
  auto sent = s.update();
  REQUIRE(sent.count(0) == 1);
  CHECK(sent[0].shares.empty());
  CHECK(s.totals().empty());
}

}  // namespace
}  // namespace corral::master
