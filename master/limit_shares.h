// Splitting per-target limits (config/limits.h) between the workers: each worker gets a share
// of every limit (shared/ipc/limits.h) and lets its requests through within it
// (worker/engine/gates.h); the shares of a limit never add up to more than the limit.
//
// Shares follow demand: each heartbeat says, per limit, how many requests a worker has in
// flight and waiting, and how many it started; a limit is split by water-filling over those
// demands (no worker gets more than it asks while another waits for less), and what no one
// asks for is spread evenly, so that a worker whose requests start can send at once.
//
// Never over the limit, even while shares move: a share that grows takes only what the others
// no longer hold. A worker may still use the larger of its old and new shares until its
// heartbeat says it applied the new ones (the version), and may still have more in flight
// than a share that shrank; so what a share gives is counted as the largest of those until
// then. Shares move within a heartbeat or two. Loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "config/limits.h"
#include "shared/ipc/limits.h"

namespace prometheus {
class Registry;
}

namespace corral::master {

class LimitShares {
 public:
  // The limits in force: the daemon's (run "") and those of runs that have them.
  void set_limits(std::map<ipc::LimitKey, config::TargetLimit> limits);
  const std::map<ipc::LimitKey, config::TargetLimit>& limits() const { return limits_; }
  // A worker that may take work joins the split (a new process in its slot starts afresh); one
  // that is gone leaves it, and what it held with it.
  void worker_ready(int slot);
  void worker_gone(int slot);
  // A worker's heartbeat, at `now_ms` (monotonic).
  void report(int slot, const ipc::LimitUses& uses, uint64_t now_ms);
  // Splits every limit again; returns the workers whose shares changed, with their new tables
  // (each a new version), to send them.
  std::map<int, ipc::LimitShares> update();
  // A worker's current table (to send before a run is defined there, or to a new worker).
  ipc::LimitShares table(int slot) const;

  // Per limit, over all workers: for /metrics.
  struct Totals {
    uint64_t in_flight = 0;
    uint64_t waiting = 0;
    uint64_t started = 0;    // counters: only grow, across worker restarts
    uint64_t throttled = 0;
  };
  std::map<ipc::LimitKey, Totals> totals() const;

 private:
  struct Use {
    ipc::LimitUse last;  // as the worker last reported it
    double started_per_s = 0;
  };
  struct Held {
    uint32_t flight = 0;         // the share it was sent
    uint32_t flight_most = 0;    // the largest it may still use (see above)
    double rate = 0;
    double rate_most = 0;
  };
  struct Worker {
    uint64_t reported_ms = 0;  // its last heartbeat
    uint64_t sent = 0;   // version of the last table sent
    uint64_t acked = 0;  // version its heartbeat says it applies
    std::map<ipc::LimitKey, Use> use;
    std::map<ipc::LimitKey, Held> held;
    ipc::LimitShares table;
  };
  void split(const ipc::LimitKey& key, const config::TargetLimit& limit);

  std::map<ipc::LimitKey, config::TargetLimit> limits_;
  std::map<int, Worker> workers_;
  std::map<ipc::LimitKey, Totals> retired_;  // counters of workers that are gone
  uint64_t next_version_ = 1;
  uint64_t turn_ = 0;  // rotates ties between starved workers
};

// corral_limit_{max_in_flight,rate,in_flight,waiting,started_total,throttled_total}{run,origin}.
void add_limit_metrics(prometheus::Registry& registry, const LimitShares& shares);

// Water-filling, for tests: `total` split over `demand` so that no one gets more than it asks
// while another gets less than it asks, and what is left is spread evenly. Sums to `total`.
std::vector<double> water_fill(double total, const std::vector<double>& demand);
// The same in whole units: shares rounded down, then the units left go to the largest
// remainders; among equal remainders, first to a worker in `starved` (waiting with nothing),
// then to one holding more now (`now`), so that shares do not move for nothing.
std::vector<uint32_t> water_fill_whole(uint32_t total, const std::vector<double>& demand,
                                       const std::vector<bool>& starved,
                                       const std::vector<uint32_t>& now, uint64_t turn);

}  // namespace corral::master
