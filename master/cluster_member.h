// This daemon as one host of a cluster, when its journal is PostgreSQL (docs/cluster.md): its
// row in the hosts table, renewed every second (cluster/hosts.h); the ranges of instances it
// claims, loaded from the journal and placed; fenced off, every instance it holds stopped; runs
// that ended on other hosts ended here too; and GET /cluster. It reaches the run table, the
// dispatcher, the runs and loads parts, and the workers through WorkerLink.
// Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "master/api_route.h"
#include "master/cluster/hosts.h"
#include "master/dispatcher.h"
#include "master/journal/journal.h"
#include "master/load_service.h"
#include "master/run_service.h"
#include "master/runs.h"
#include "master/worker_link.h"
#include "shared/ipc/control.h"

namespace corral::master {

// This host's id: the machine's name and a hash of the home, so that a restart on the same
// home is the same host, and two homes on one machine are two hosts.
std::string host_id(const std::string& home);

class ClusterMember {
 public:
  ClusterMember(uv_loop_t* loop, Runs& runs, Dispatcher& dispatcher, RunService& run_service,
                LoadService& load_service, WorkerLink& workers)
      : loop_(loop),
        runs_(runs),
        dispatcher_(dispatcher),
        run_service_(run_service),
        load_service_(load_service),
        workers_(workers) {}

  // Joins the cluster when the journal at `path` (`label` for logs) is PostgreSQL; does nothing
  // otherwise. `home` makes this host's id; `address` is the API's address, for its row.
  void start(journal::Journal* journal, const std::string& path, const std::string& label,
             const std::string& home, std::function<std::string()> address);
  // The daemon stops: its heartbeats end, and once the journal has written everything before,
  // its ranges are released for the other hosts (Store::leave).
  void leave();
  // The host's lease, for a worker's welcome (ipc::Lease): ipc::kNoLease when this daemon is in
  // no cluster, 0 while it holds none. Each renewal sends the new one to every worker.
  uint64_t lease_until_ms() const { return hosts_ ? hosts_->lease_until_ms() : ipc::kNoLease; }
  // A worker of `slot` took over one welcomed earlier (a reload): it gets the lease of now.
  void worker_adopted(int slot);
  // The hosts, while this daemon is in a cluster; nullptr otherwise.
  const cluster::Hosts* hosts() const { return hosts_.get(); }

  // GET /cluster, and the table that holds it.
  static const std::vector<ApiRoute>& routes();
  void api_cluster(const ApiCall& c);

 private:
  // Claimed ranges are read a page at a time (up to kRangesPerRead ranges of one run, back to
  // back), each placed as soon as it is read. They are read on a connection of their own
  // (reader()), so that the next page is read while the journal writes the resumes of the
  // page before: a takeover of a dead host's 33,000 instances costs the longer of the two,
  // not their sum.
  static constexpr size_t kRangesPerRead = 20;
  void on_claimed(std::vector<cluster::Claim> claims);
  void load_claimed(std::vector<cluster::Claim> page);
  journal::Journal& reader() { return reader_ ? *reader_ : *journal_; }
  void drop_claims(const std::string& why);
  void on_open_runs(const cluster::OpenRuns& open);
  // Reads a run's row from the journal, then calls `fn` with it on the loop (not when the run
  // is not there, or cannot be read).
  void load_run_row(const std::string& id, std::function<void(const journal::RunRow&)> fn);

  uv_loop_t* loop_;
  Runs& runs_;
  Dispatcher& dispatcher_;
  RunService& run_service_;
  LoadService& load_service_;
  WorkerLink& workers_;
  journal::Journal* journal_ = nullptr;
  std::unique_ptr<journal::Journal> reader_;  // claimed ranges' reads; null: journal_'s
  std::unique_ptr<cluster::Hosts> hosts_;
  int64_t pruned_before_ms_ = 0;  // the cluster's last prune by age, as applied here
};

}  // namespace corral::master
