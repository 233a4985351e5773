// The load tests part: the table of tests (loads.h), the tests waiting for workers, the watches
// of their targets, the shares of tests spread over the hosts of a cluster, and the /loads
// routes. It reaches the workers through WorkerLink, and the cluster through its load shares.
//   api_loads.cc            POST/GET /loads, GET/DELETE /loads/<id>; a submission's checks
//   load_service.cc         starting a test on the workers, its seconds, its end
//   load_service_shares.cc  a test over the hosts of a cluster (docs/cluster.md)
//   load_service_takeover.cc  ... taken over when its origin is gone
//   load_service_target.cc  the target a test starts (a load section's "target")
//   load_service_kept.cc    tests that ended, kept in the journal (kept_loads.h)
// Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "master/api_route.h"
#include "master/cluster/hosts.h"
#include "master/cluster/load_shares.h"
#include "master/journal/journal.h"
#include "master/kept_loads.h"
#include "master/load_watch.h"
#include "master/loads.h"
#include "master/target_process.h"
#include "master/worker_link.h"
#include "shared/proc.h"
#include "shared/secrets.h"

namespace corral::master {

// Workers a test needs on this host: one per load_connections_per_worker (by default, the
// file-descriptor limit less room for the worker's own files) held connections of its share;
// a test of any other model runs on the workers there are, and needs one.
size_t workers_needed(const LoadSubmission& sub, const config::Config& cfg);

class LoadService {
 public:
  // `cfg` and `secrets` are the daemon's, which a reload replaces in place.
  LoadService(uv_loop_t* loop, const config::Config& cfg, const Secrets& secrets,
              WorkerLink& workers)
      : loop_(loop), cfg_(cfg), secrets_(secrets), workers_(workers) {}

  // The table, for the journal's numbering of tests and for /metrics.
  Loads& table() { return loads_; }
  const Loads& table() const { return loads_; }
  // Tests that ended: read from `journal` now (start-up), kept in it from now on. `host` is this
  // host's id on a journal hosts share, else "".
  Status attach(journal::Journal* journal, std::string host) {
    return kept_.restore(journal, std::move(host));
  }
  const KeptLoads& kept() const { return kept_; }
  // The daemon begins to stop: each running test of this host ends as stopped, saying `why`.
  void stop_all(const std::string& why);
  // The daemon stops (its workers are gone): a test still running ends as stopped, saying
  // `why`, its target is killed, and every test of this host is kept now.
  void keep_all(const std::string& why);

  // From the daemon's tick: tests waiting for workers start once they are ready (or are
  // refused after a while); the worker count raised for them comes down once no test needs it.
  void on_tick();
  // A worker's `load_stats` frame; a malformed one is the worker's protocol error.
  Status on_load_stats(int slot, const nlohmann::json& payload);
  // The worker of `slot` is gone: its share of every running test ends.
  void worker_gone(int slot) { loads_.worker_gone(slot, unix_ms_now()); }

  // This host is one of a cluster's: tests may be spread over the hosts, and this host runs
  // its shares of the others' tests. Its queries go on the hosts' connection, at their beat.
  void join_cluster(cluster::Hosts* hosts);
  void leave_cluster() { load_shares_.reset(); }

  // The routes, and their table (api_loads.cc).
  static const std::vector<ApiRoute>& routes();
  void api_start(const ApiCall& c);
  void api_list(const ApiCall& c);
  void api_get(const ApiCall& c);
  void api_stop(const ApiCall& c);

 private:
  // Tests that ended and whose target has stopped are kept (or, for another host's test,
  // forgotten a while later); retention forgets kept ones (load_service_kept.cc).
  void keep_ended();
  void keep_ended_at(int64_t now, bool all);  // all: shares too, at once
  void prune_kept();

  using Started = std::function<void(const LoadTest&)>;
  using Refused = std::function<void(const std::string& why)>;
  // A test's submission checked into `out`; or the answer that refuses it.
  std::optional<http::Response> check(const nlohmann::json& body, LoadSubmission& out) const;
  // Starts a checked test (sub.id set) once the workers it needs are ready: `started` with it,
  // or `refused` saying why it cannot start.
  void run(LoadSubmission sub, Started started, Refused refused);
  // Starts a checked test on `ready` workers.
  LoadTest& launch(LoadSubmission sub, const std::vector<int>& ready);
  // A test with a target (load_service_target.cc): the target starts first, and the test runs
  // once it is ready; a target that is not refuses the test, saying why with its last lines.
  void start_target(LoadSubmission sub, Started started, Refused refused);
  // What became of a test's target: its end while the test runs ends the test.
  void on_target_exit(const std::string& id, TargetProcess::Exit exit);
  // Stops the target of test `id` once the test has ended.
  void stop_target_after(const std::string& id);
  // The test's record of its target, from the process (its lines, peak, cause).
  void copy_target(LoadTest& t) const;
  // The test's record of how its target ended (`e`), at `now_ms`.
  void note_target_end(LoadTest& t, const TargetProcess::Exit& e, int64_t now_ms) const;
  // Thresholds with abort_on_fail that test `id` now crosses end it.
  void check_aborting(const std::string& id);
  // A sample of a test's watched target; ends the test when the target says so.
  void on_target_sample(const std::string& id, nlohmann::json sample);
  // Ends `t` early as `state`, asking its workers to stop.
  void end(LoadTest& t, LoadState state, const std::string& reason);
  // A test spread over the hosts (load_service_shares.cc): this host is its origin, runs share
  // 0, and adds up the seconds the others send.
  void spread(LoadSubmission sub, const http::Responder& respond);
  void publish(std::shared_ptr<LoadSubmission> sub, const http::Responder& respond);
  // This host's shares of other hosts' tests, read every second: new ones start, stopped or
  // vanished ones end.
  void on_shares(std::vector<cluster::ShareRow> rows);
  void start_share(const cluster::ShareRow& row);
  // A second another host measured for a test this host is the origin of; the state of that
  // host's share.
  void on_remote_second(const std::string& id, const std::string& host, nlohmann::json second);
  void on_share_state(const std::string& id, const std::string& host, const std::string& state);
  // This host took a test over from its origin, gone (load_service_takeover.cc); or, as the
  // origin, lost one it had to host `origin` ("": the test is gone).
  void on_claimed(cluster::ClaimedLoad c);
  void on_lost(const std::string& id, const std::string& origin);
  // Starts watching the target of `t` (spec.watch).
  void start_watch(const LoadTest& t);

  uv_loop_t* loop_;
  const config::Config& cfg_;
  const Secrets& secrets_;
  WorkerLink& workers_;
  Loads loads_;
  KeptLoads kept_;
  int64_t pruned_ms_ = 0;  // when retention last ran
  // A held-connection test needs a worker per ~18,000 connections (the file-descriptor limit),
  // beyond the usual count if need be: it waits here while they start.
  struct Pending {
    LoadSubmission sub;
    Started started;
    Refused refused;
    size_t need = 0;
    uint64_t deadline_ms = 0;
  };
  std::vector<Pending> pending_;
  int base_wanted_ = -1;  // workers wanted before a test raised the count; -1: not raised
  std::map<std::string, std::unique_ptr<TargetWatch>> watches_;  // by test, while it runs
  // The targets tests started, by test, until they end.
  std::map<std::string, std::unique_ptr<TargetProcess>> targets_;
  cluster::Hosts* hosts_ = nullptr;                              // in a cluster
  std::unique_ptr<cluster::LoadShares> load_shares_;             // with hosts_
  std::set<std::string> spread_;           // tests this host is the origin of, until forgotten
  std::set<std::string> starting_shares_;  // shares waiting for workers
};

}  // namespace corral::master
