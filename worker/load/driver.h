// LoadDriver: this worker's part of one load test. It starts iterations of the test's scenario
// on the engine as the model says (config/load/model.h), measures each exchange, and reports
// each second's measurements (ipc::LoadSecond) to the master, which adds up the workers.
//
// The share: worker `index` of `of` runs its part of the VUs (VU k of the test runs on worker
// k mod of) or of the arrival rate (rate / of). A test spread over hosts (docs/cluster.md) is
// split twice: VU k runs on host k mod hosts, as that host's VU k / hosts, which its workers
// split as above; each worker gets rate / (hosts * of).
//
// Schedules and lateness. With a pace (closed) or a rate (open), every iteration has an
// intended start, which the wake-up queue's exact clock keeps to within a fraction of a
// millisecond (WakeQueue::use_exact_clock). A VU whose iteration overran its pace starts the next
// one at once, late, and keeps its schedule (it does not skip: skipping would hide the stall); an
// open-model arrival that finds no free VU is dropped and counted. Each request's `latency` is its
// raw time plus its iteration's lateness: the time a user who arrived on schedule would have waited
// (coordinated omission corrected). Without a schedule the two are the same. The part of the
// lateness that is corral's own (its loop came to a start late, not a slow iteration before it) is
// reported apart (LoadSecond::late), so that a reader can tell the two.
//
// The end: at the test's duration (or stop()) no iteration starts; those running get the
// grace period, then are cut off and counted as interrupted. The last report has done=true.
//
// Held model: a closed model whose VUs each own one keep-alive connection for the whole test
// (HttpRequest::pin), opened at the VU's first request and closed when the VU retires; and one
// WebSocket of each name its ws steps open (SocketHold), the same way. Past
// kPerSource (10,000) connections to a loopback target, VUs connect from 127.0.0.1,
// 127.0.0.2, ... in turn (or from the test's source_addresses), since one (source,
// destination) pair has only the ephemeral port range to tell connections apart.
// Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/load/model.h"
#include "shared/ipc/load_stats.h"
#include "shared/status.h"
#include "shared/uv/exact_timer.h"
#include "shared/uv/next_turn.h"
#include "shared/uv/timer.h"
#include "worker/engine/engine.h"
#include "worker/engine/wake_queue.h"

namespace corral::worker {

struct LoadShare {
  uint32_t index = 0;  // this worker, among its host's workers in the test
  uint32_t of = 1;
  uint32_t host = 0;   // this host, among the hosts in the test
  uint32_t hosts = 1;

  // This worker's part of `total` VUs.
  uint64_t part(uint64_t total) const;
  // The share of the arrival rate this worker takes.
  double fraction() const { return 1.0 / (static_cast<double>(of) * hosts); }
  // The test's number for this worker's VU `vu`: the same on every run.
  uint64_t test_vu(uint64_t vu) const { return host + uint64_t{hosts} * (index + uint64_t{of} * vu); }
};

class LoadDriver final : public IterationSink {
 public:
  using Report = std::function<void(ipc::LoadSecond&&)>;

  LoadDriver(uv_loop_t* loop, Engine& engine, std::string id, load::LoadSpec spec,
             LoadShare share, Report report);
  ~LoadDriver() override;
  LoadDriver(const LoadDriver&) = delete;
  LoadDriver& operator=(const LoadDriver&) = delete;

  // Defines the test's run in the engine (the scenario and run-time vars as for a run) and
  // starts the test `delay_ms` from now. Fails with the parser's message, or for a model this
  // worker cannot run.
  Status start(const nlohmann::json& scenario, const nlohmann::json& vars, uint64_t delay_ms);
  // Ends the test early: no new iteration starts; those running get the grace period.
  void stop();
  bool finished() const { return phase_ == Phase::kFinished; }
  const std::string& id() const { return id_; }
  // VUs that exist now, running or waiting for their next iteration.
  uint64_t vus() const { return live_; }

  // IterationSink, called by the engine.
  void on_exchange(uint32_t vu, size_t step, const HttpResponse& resp, ExchangeClass cls,
                   uint64_t elapsed_ns, TraceId trace) override;
  void on_expect_failed(uint32_t vu, size_t step) override;
  void on_iteration_end(uint32_t vu, ipc::Outcome outcome, const std::string& reason,
                        TraceId trace) override;
  void on_request(uint32_t vu, HttpRequest& req) override;
  SocketHold socket_hold(uint32_t vu, std::string_view url) override;
  void on_measure(uint32_t vu, size_t step, ExchangeClass cls, uint64_t bytes, int64_t elapsed_ns,
                  TraceId trace) override;

 private:
  // Counts a request (or a WebSocket operation) in its step's second; `status` 0: none.
  void record(uint32_t vu, size_t step, ExchangeClass cls, uint64_t bytes, int64_t elapsed_ns,
              int status, TraceId trace);
  enum class Phase { kWaiting, kRunning, kDraining, kFinished };
  enum class VuState : uint8_t { kIdle, kRunning, kWaiting, kRetired };
  struct Vu {
    VuState state = VuState::kIdle;
    bool retiring = false;     // ends after its current iteration (ramping down)
    uint64_t intended_us = 0;  // the current or next iteration's intended start
    uint64_t started_us = 0;   // when the current iteration started
    uint64_t ready_us = 0;     // when it began to wait for its next iteration
    uint64_t token = 0;        // its pending wake-up
  };

  void begin();
  void on_tick();
  void on_second();
  void on_wake(uint32_t vu, uint64_t token);
  void set_vus(uint64_t want, uint64_t now_us);
  uint32_t add_vu();
  void retire(uint32_t vu);
  void run_arrivals(uint64_t now_us);
  void run_due_arrivals(uint64_t now_us);
  void on_arrivals_due(uint64_t token);
  void begin_iteration(uint32_t vu, uint64_t intended_us, uint64_t ready_us);
  void schedule(uint32_t vu, uint64_t at_us);
  void drain();
  void retire_some();
  void finish_soon();
  void finish();
  // Reports each second of the test when it ends, by the test's clock.
  void arm_second();
  ipc::LoadSecond take_second();
  uint64_t elapsed_ms(uint64_t now_us) const;
  // Held model (driver_held.cc).
  void start_held();
  uint64_t pin_of(uint32_t vu) const;
  const std::string* source_for(uint32_t vu, std::string_view url) const;
  void release_connection(uint32_t vu);
  void release_connections();
  void count_connections(ipc::LoadSecond& out);

  Engine& engine_;
  std::string id_;
  load::LoadSpec spec_;
  LoadShare share_;
  Report report_;
  bool scheduled_;  // iterations have an intended start (pace or rate)

  Phase phase_ = Phase::kWaiting;
  uint64_t t0_us_ = 0;  // the test's start, monotonic
  std::vector<Vu> vus_;
  std::vector<uint32_t> idle_;     // open model: VUs free for the next arrival
  std::vector<uint32_t> retired_;  // slots of retired VUs, reused by the next new VU
  uint64_t live_ = 0;              // VUs neither retired nor retiring
  uint64_t max_vus_ = 0;           // open model: this worker's share of max_vus
  double next_arrival_us_ = 0;     // open model: the next arrival's intended start
  uint64_t arrivals_at_ = 0;       // ... as the wake-up queue has it
  uint64_t arrivals_token_ = 0;    // ... its wake-up; 0 for none
  bool starting_ = false;  // inside engine_.start(): an iteration ending now must not restart

  ipc::LoadSecond second_;              // counts of the second in progress
  std::vector<ipc::StepSecond> steps_;  // ... by step index
  uint32_t second_index_ = 0;           // the least the next report's second can be

  // This test's connections and sockets are counted by group_ (the HTTP client's and the
  // WebSocket steps'); in the held model its pins are (group_ << 32 | VU).
  const bool held_;
  uint32_t group_ = 0;
  HeldCounts held_seen_;               // the client's counts at the last report
  SocketCounts sockets_seen_;          // the sockets' counts at the last report
  std::vector<std::string> sources_;   // source addresses, by the test's VU number mod size

  WakeQueue wakes_;
  uv::Timer start_timer_;
  uv::Timer tick_;
  uv::ExactTimer second_timer_;  // on the test's clock: never before the second's end
  uv::Timer grace_timer_;
  uv::Timer finish_timer_;
  // Draining: the next VU to look at, and the turn that goes on from it (retire_some).
  size_t drain_next_ = 0;
  uv::NextTurn drain_turn_;
};

}  // namespace corral::worker
