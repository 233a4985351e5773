// The master's load tests: each one's workers, their seconds added up into a time series and
// totals, and its thresholds. Workers measure (worker/load/driver.h); the master only adds.
//
// A second is complete once every worker still taking part has reported it (or a later one,
// or its end); complete seconds are added to the totals and summed up in the series. A worker
// that leaves during a test is dropped from it, and the test says so.
//
// A test spread over the hosts of a cluster (docs/cluster.md): on its origin, each other host
// takes part as one more "slot" (negative, so never a worker's), whose seconds are that host's
// workers' added up; on each other host, the test is a share whose complete seconds (and late
// ones, and its end) are forwarded to the origin instead of being judged. The origin forwards
// its own workers' seconds too, so that another host can take the test over (adopt()) if it
// dies.
//
// Pure bookkeeping: no I/O and no clock of its own (times are passed in). Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/load/model.h"
#include "shared/api/loads.h"
#include "shared/ipc/load_stats.h"
#include "shared/status.h"

namespace corral::master {

enum class LoadState { kRunning, kPassed, kFailed, kStopped, kAborted };
std::string_view to_string(LoadState s);

// A threshold's result over the totals.
struct ThresholdResult {
  const load::Threshold* threshold = nullptr;
  double value = 0;  // in the threshold's unit
  bool held = true;
};

// A load test as submitted and checked, before it starts.
struct LoadSubmission {
  std::string id;
  nlohmann::json scenario, load, vars;
  load::LoadSpec spec;
  std::vector<std::string> unverified;  // steps whose tls.verify is false
  std::vector<std::string> step_kinds;  // LoadTest::step_kinds
  // Spread over hosts (docs/cluster.md): the hosts taking part (on the origin, itself first),
  // this host's share, the origin (on another host), and when the workers start (Unix ms).
  std::vector<std::string> hosts;
  uint32_t host_index = 0, host_count = 1;
  std::string origin;
  int64_t start_ms = 0;
};

struct LoadTest {
  std::string id;
  std::string name;  // the scenario's
  nlohmann::json scenario;
  nlohmann::json vars;
  nlohmann::json load;  // the load section as submitted
  load::LoadSpec spec;
  std::vector<std::string> step_names;  // by step index
  std::vector<std::string> step_kinds;  // by step index (Scenario::steps)
  LoadState state = LoadState::kRunning;
  std::string reason;  // why it ended as it did, or what went wrong along the way
  int64_t created_ms = 0;
  int64_t started_ms = 0;   // when the workers were told to start
  int64_t stopping_ms = 0;  // when it was asked to end early
  int64_t ended_ms = 0;
  size_t workers = 0;                           // taking part at the start
  std::set<int> slots;                          // workers still taking part
  std::map<int, int64_t> last_second;           // per worker: the last second it reported
  std::map<uint32_t, ipc::LoadSecond> pending;  // seconds not yet complete
  ipc::LoadSecond total;
  uint32_t seconds = 0;                // complete seconds so far
  std::vector<nlohmann::json> series;  // one summary per complete second
  // Set when the test was asked to end early (stopped, or aborted by a threshold): the state it
  // takes once its workers have reported their end. Unset: its thresholds decide.
  std::optional<LoadState> ending;
  // The watched target (spec.watch): a sample per second, and what the target did to end the
  // test, if it did: null, or {"event": "crossed"|"died", "t", "condition", "value", "load"}.
  std::vector<nlohmann::json> target;
  nlohmann::json target_event;
  // What happened when (loads_events.cc): thresholds first crossed, the end early, the
  // target's end; stage changes are added when the test is answered.
  std::vector<api::LoadEvent> events;
  std::set<size_t> crossed;  // thresholds (by index) with a "threshold" event
  // The target corral started for the test (spec.target), kept up to date by LoadService.
  std::optional<api::LoadTargetProcess> process;
  // Spread over hosts: on the origin, every other host's share by its slot (state: '' until
  // it starts, running, done, left once dropped, or why it could not run); on another host,
  // the origin's id and this host's share.
  struct Remote {
    std::string host;
    std::string state;
  };
  std::map<int, Remote> remote;
  // On the origin: its own workers' part of the seconds not yet complete, forwarded once each
  // of its workers has reported it.
  std::map<uint32_t, ipc::LoadSecond> local;
  std::string origin;
  uint32_t host_index = 0, host_count = 1;

  bool ended() const { return state != LoadState::kRunning; }
};

class Loads {
 public:
  // A test of `spec`, run by the workers in `slots`. The scenario was validated by the caller.
  LoadTest& add(std::string id, nlohmann::json scenario, nlohmann::json vars, nlohmann::json load,
                load::LoadSpec spec, std::set<int> slots, int64_t now_ms, int64_t start_ms);
  LoadTest* find(const std::string& id);
  const LoadTest* find(const std::string& id) const;
  // Newest first.
  std::vector<const LoadTest*> list() const;
  // Forgets a test (once it is kept, master/kept_loads.h).
  void remove(const std::string& id);

  // A worker's second. Fails (the worker's protocol error) for a test it does not take part in.
  // Returns the tests whose thresholds with abort_on_fail were crossed by this second.
  Status on_second(int slot, ipc::LoadSecond&& s, int64_t now_ms);
  // The worker of `slot` is gone: every test drops it.
  void worker_gone(int slot, int64_t now_ms);
  // Test `t` drops `slot` (a worker, or another host), saying `why` ("": nothing).
  void drop(LoadTest& t, int slot, const std::string& why, int64_t now_ms);
  // Where a share's seconds go (to its origin): complete ones, late ones, and the last, with
  // done set.
  void set_forward(std::function<void(const LoadTest&, const ipc::LoadSecond&)> forward) {
    forward_ = std::move(forward);
  }
  // The slot of another host in a test spread over hosts: share 1 is slot -2, and so on.
  static int host_slot(uint32_t share) { return -1 - static_cast<int>(share); }
  static uint32_t share_of_slot(int slot) { return static_cast<uint32_t>(-1 - slot); }
  // Another host's share of a test, with the seconds it sent, in the order it sent them
  // (adopt()).
  struct ShareHistory {
    std::string host;
    uint32_t index = 0;
    std::string state;  // its share's: '', running, done, or why it could not run
    std::string left;   // why it no longer takes part; "" if it does
    std::vector<ipc::LoadSecond> seconds;
  };
  // `t`, this host's share of a test whose origin is gone, becomes the whole test with this
  // host as its origin (loads_adopt.cc). Its totals, series and crossed thresholds are added up
  // again from every host's seconds so far: `own`, those this host forwarded, and `others`'.
  // A share that left is dropped after its seconds; the others take part from here as on any
  // origin.
  void adopt(LoadTest& t, std::vector<ipc::LoadSecond> own, std::vector<ShareHistory> others,
             int64_t now_ms);
  // Thresholds with abort_on_fail that the totals now cross (past their delay).
  std::vector<ThresholdResult> crossed_aborting(const LoadTest& t, int64_t now_ms) const;
  std::vector<ThresholdResult> evaluate(const LoadTest& t, int64_t now_ms) const;
  // The test's summary for the API (shared/api/loads.h): state, totals, latency, thresholds,
  // and (with `series`) the per-second time series. Latency thresholds' values are in ms.
  api::LoadAnswer answer(const LoadTest& t, bool series, int64_t now_ms) const;
  // Each threshold with its value now and whether it holds.
  std::vector<api::ThresholdOutcome> thresholds_of(const LoadTest& t, int64_t now_ms) const;
  // Seconds the test has been generating load: up to now, its stop or its duration.
  static double elapsed_s(const LoadTest& t, int64_t now_ms);
  // Marks a test to end as `state` (kStopped or kAborted) once its workers report their end.
  // False when it has ended or is ending already.
  bool end(LoadTest& t, LoadState state, std::string reason, int64_t now_ms);
  // A sample of the watched target (master/load_watch.h), kept in t.target. When a stop_when
  // condition holds, or the process is gone, it records t.target_event with the load of the
  // last complete second and returns the reason to end the test (loads_target.cc).
  std::optional<std::string> on_target(LoadTest& t, nlohmann::json sample, int64_t now_ms);
  // The target corral started ended by itself while the test ran (t.process says how): records
  // t.target_event ("died", with its exit and the load of the last complete second) and returns
  // the reason to end the test; nullopt when the test has ended or is ending already.
  std::optional<std::string> on_target_died(LoadTest& t, int64_t now_ms);

  // Ids of new tests, l<N>-xxxx: numbers go on from `next` (the journal's, at start-up), and
  // `keep` is told each time the next number changes, so that a restart goes on from there.
  void number_from(uint64_t next, std::function<void(uint64_t next)> keep) {
    seq_ = next - 1;
    keep_seq_ = std::move(keep);
  }
  std::string next_id();

  // The test's events, with a "stage" one where each stage after the first began (up to
  // `elapsed_s`), by time (loads_events.cc).
  static std::vector<api::LoadEvent> events_of(const LoadTest& t, double elapsed_s);

 private:
  void complete_seconds(LoadTest& t);
  void forward_own(LoadTest& t);
  // After a complete second: thresholds the totals cross for the first time become events.
  void note_crossings(LoadTest& t);
  void finish_if_done(LoadTest& t, int64_t now_ms);

  std::function<void(const LoadTest&, const ipc::LoadSecond&)> forward_;
  std::map<std::string, std::unique_ptr<LoadTest>> tests_;
  std::vector<std::string> order_;  // ids, oldest first
  uint64_t seq_ = 0;                 // the last test's number
  std::function<void(uint64_t)> keep_seq_;
};

// The value of `th` over the test's totals, for a test that ran `elapsed_s` seconds.
double threshold_value(const load::Threshold& th, const LoadTest& t, double elapsed_s);

}  // namespace corral::master
