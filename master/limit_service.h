// The per-target limits part (config/limits.h): which limits are in force (the daemon's own,
// and those of the runs that have them and are not finished), and their shares sent to the
// workers (limit_shares.h). It reads the run table and sends through WorkerLink.
// Loop thread only.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "master/limit_shares.h"
#include "master/runs.h"
#include "master/worker_link.h"
#include "shared/status.h"

namespace corral::master {

class LimitService {
 public:
  // `cfg` is the daemon's, which a reload replaces in place.
  LimitService(const config::Config& cfg, Runs& runs, WorkerLink& workers)
      : cfg_(cfg), runs_(runs), workers_(workers) {}

  // A worker is ready (the daemon's own limits are in force from the first one on), or gone:
  // the shares are split again and the changed ones sent.
  void worker_ready(int slot);
  void worker_gone(int slot);
  // The limits' use a worker's heartbeat reported; a malformed one is its protocol error.
  Status on_use(int slot, const nlohmann::json& use, uint64_t now_ms);
  // Before a run is first defined on a worker (Dispatcher::set_before_define): its limits come
  // into force first.
  void before_define(const Run& run);
  // The limits in force again (after a reload, and every second: those of finished runs go),
  // and the shares that changed sent.
  void refresh();
  const LimitShares& shares() const { return shares_; }

 private:
  void push();

  const config::Config& cfg_;
  Runs& runs_;
  WorkerLink& workers_;
  LimitShares shares_;
  // The runs whose scenarios have limits, from their first definition on a worker until they
  // finish.
  std::set<std::string> limited_runs_;
};

}  // namespace corral::master
