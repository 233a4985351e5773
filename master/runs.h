// Runs: what the master knows of every submitted run and each of its instances. Workers report
// transitions (a step ended, an instance ended); this table applies them and answers the runs
// API. In memory for now; the journal (SQLite) will keep it across restarts. Loop thread only.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario/model.h"

namespace corral::master {

#define CORRAL_INSTANCE_STATES(X) \
  X(kQueued, "queued")            \
  X(kRunning, "running")          \
  X(kPassed, "passed")            \
  X(kFailed, "failed")            \
  X(kErrored, "errored")          \
  X(kCancelled, "cancelled")

enum class InstanceState : uint8_t {
#define CORRAL_INSTANCE_ENUM(name, text) name,
  CORRAL_INSTANCE_STATES(CORRAL_INSTANCE_ENUM)
#undef CORRAL_INSTANCE_ENUM
};
constexpr size_t kInstanceStates = 6;
std::string_view to_string(InstanceState s);
std::optional<InstanceState> instance_state_from(std::string_view s);
inline bool is_terminal(InstanceState s) {
  return s != InstanceState::kQueued && s != InstanceState::kRunning;
}

struct StepRecord {
  uint32_t step = 0;
  std::string state;  // passed, failed, errored
  uint32_t attempts = 0;
  int64_t started_ms = 0, ended_ms = 0;
  int status = 0;         // last HTTP status, 0 when none
  int64_t until_ms = -1;  // poll steps: time until the condition held
  std::string reason;
};

struct InstanceRecord {
  InstanceState state = InstanceState::kQueued;
  int worker = -1;  // slot that runs it
  uint32_t next_step = 0;
  uint32_t resumes = 0;
  int64_t started_ms = 0, ended_ms = 0;
  std::string reason;
  std::vector<std::string> resume_reasons;
  nlohmann::json vars;         // captured so far: what a resumed instance continues with
  nlohmann::json checkpoint;   // handed back by a stopping worker: the next placement uses it
  uint32_t crash_resumes = 0;  // resumes because the worker died (counted against the limit)
  std::vector<StepRecord> steps;
};

struct Run {
  std::string id;
  std::shared_ptr<const scenario::Scenario> scenario;
  nlohmann::json vars;  // run-time vars
  int64_t created_ms = 0, finished_ms = 0;
  std::vector<InstanceRecord> instances;
  std::array<uint32_t, kInstanceStates> counts{};
  uint32_t next_fresh = 0;        // instances at or past this were never dispatched
  std::deque<uint32_t> requeued;  // instances to resume from their checkpoint
  std::vector<int64_t> durations_ms;
  std::map<std::pair<uint32_t, std::string>, uint32_t> failures;  // (step, reason) -> count
  bool cancelled = false;

  uint32_t count(InstanceState s) const { return counts[static_cast<size_t>(s)]; }
  bool finished() const;
  size_t pending() const { return instances.size() - next_fresh + requeued.size(); }
  const char* state() const;
};

class Runs {
 public:
  // `max_resumes`: an instance whose worker died under it more often than this is errored.
  explicit Runs(size_t keep_finished = 200, uint32_t max_resumes = 5)
      : keep_finished_(keep_finished), max_resumes_(max_resumes) {}

  Run& create(std::shared_ptr<const scenario::Scenario> scenario, nlohmann::json vars,
              uint32_t instances, int64_t now_ms);
  Run* find(const std::string& id);
  // Runs in submission order, oldest first.
  const std::deque<std::unique_ptr<Run>>& all() const { return runs_; }

  void set_state(Run& run, uint32_t index, InstanceState to);
  // Applies one worker event (worker/engine/engine.h). Unknown runs or indexes are ignored:
  // the run may have been cancelled or pruned meanwhile.
  void apply(int slot, const nlohmann::json& ev, int64_t now_ms);
  // Every running instance on `slot` goes back to the queue, to resume from its last finished
  // step (or is errored past max_resumes). Returns how many were requeued.
  size_t requeue_worker(int slot, const std::string& why);
  // A stopping worker handed back these instances ({"<run>": {"<index>": checkpoint}}): they
  // go back to the queue with their checkpoints. Returns how many.
  size_t hand_back(int slot, const nlohmann::json& instances);
  // Marks every unfinished instance cancelled. Returns how many.
  size_t cancel(Run& run, int64_t now_ms);
  // Instances waiting for a worker, over all runs.
  size_t pending() const;
  // Forgets the oldest finished runs beyond the retention count.
  void prune();

  nlohmann::json summary_json(const Run& run) const;
  nlohmann::json detail_json(const Run& run) const;
  nlohmann::json instance_json(const Run& run, uint32_t index, bool with_steps) const;

 private:
  void finish_instance(Run& run, uint32_t index, InstanceState state, const std::string& reason,
                       int64_t started_ms, int64_t ended_ms);
  size_t keep_finished_;
  uint32_t max_resumes_;
  std::deque<std::unique_ptr<Run>> runs_;
  std::map<std::string, Run*> by_id_;
  uint64_t next_id_ = 1;
};

}  // namespace corral::master
