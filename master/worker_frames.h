// What a current worker tells the master, one function per frame: hello (answered with the
// welcome), ready, heartbeat, leaving, events, load seconds, hand-backs. Each fact goes to the
// part that owns it: the supervisor (the slot's state), the dispatcher (capacity, placement),
// the run table (events, instances handed back), LimitService (limit use), LoadService (load
// seconds), LiveMetrics (steps). It keeps what the heartbeats report for /metrics. A payload
// that breaks the contract is the worker's protocol error (WorkerProcess::fail_protocol).
//
// The daemon owns the processes: it checks that a frame comes from the slot's current worker
// (a reload's successor and the spare have their own handlers) before it hands it here.
// Loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "master/dispatcher.h"
#include "master/limit_service.h"
#include "master/live_metrics.h"
#include "master/load_service.h"
#include "master/runs.h"
#include "master/supervisor.h"
#include "master/worker_process.h"
#include "shared/ipc/control.h"
#include "shared/ipc/http_errors.h"

namespace corral::master {

class WorkerFrames {
 public:
  // What it needs of the daemon.
  class Host {
   public:
    // Queued instances are placed in a later turn of the loop.
    virtual void place_soon() = 0;
    // The supervisor's state changed: reconcile soon.
    virtual void kick() = 0;
    // The welcome for the worker of `slot`, from the image the slot starts from.
    virtual ipc::Welcome welcome_for(int slot) const = 0;

   protected:
    ~Host() = default;
  };
  // The parts the frames' facts go to.
  struct Parts {
    Supervisor& supervisor;
    Dispatcher& dispatcher;
    Runs& runs;
    LimitService& limits;
    LoadService& loads;
    LiveMetrics& metrics;
  };

  WorkerFrames(Host& host, Parts parts) : host_(host), p_(parts) {}

  // A frame of `w`, the current worker of `slot`, read at `now` (monotonic ms).
  void on_frame(int slot, WorkerProcess& w, ipc::Frame&& f, uint64_t now);
  // The slot has a new worker (a reload's successor took over): its HTTP errors start over.
  void forget(int slot) { http_errors_.erase(slot); }
  // The slot's worker exited: it sends no requests (its HTTP errors stay until the next hello).
  void worker_gone(int slot) { requests_sent_.erase(slot); }

  // Per slot: the HTTP connection errors and the requests its worker's last heartbeat reported.
  const std::map<int, std::vector<ipc::HttpErrorCounts>>& http_errors() const {
    return http_errors_;
  }
  const std::map<int, uint64_t>& requests_sent() const { return requests_sent_; }

 private:
  void on_hello(int slot, WorkerProcess& w, const nlohmann::json& payload);
  void on_ready(int slot, WorkerProcess& w, uint64_t now);
  void on_heartbeat(int slot, WorkerProcess& w, const ipc::Heartbeat& beat, uint64_t now);
  void on_leaving(int slot, WorkerProcess& w, const ipc::Leaving& leaving);
  // Applies an `events` frame; a malformed event is the worker's protocol error.
  Status on_events(int slot, const nlohmann::json& payload);
  // A step event's part of /metrics: its kind, outcome and duration.
  void count_step(const ipc::Event& ev);
  // Instances released to even out the workers' loads, or handed back by a stopping worker.
  void on_handback(int slot, WorkerProcess& w, const ipc::Handback& back, uint64_t now);

  Host& host_;
  Parts p_;
  std::map<int, std::vector<ipc::HttpErrorCounts>> http_errors_;
  std::map<int, uint64_t> requests_sent_;
};

}  // namespace corral::master
