// Taking instances off the engine to move them: all of them for a stopping worker's hand-back,
// the waiting ones for a rebalance. Each leaves as a checkpoint the next worker resumes from.
#include "shared/ipc/vars.h"
#include "shared/proc.h"
#include "worker/engine/engine.h"
#include "worker/engine/instance.h"

namespace corral::worker {

ipc::Checkpoint Engine::checkpoint_of(const Instance& in, bool moving) const {
  ipc::Checkpoint cp = in.cp;
  cp.vars = ipc::vars_to_wire(in.cp.vars, secrets_);
  if (auto it = forks_.find(in.serial); it != forks_.end()) {
    cp.branches = branches_to_json(it->second);
  }
  // When its step's next request is due: the wake-up it waits for, or now for a step that was
  // in the middle of a request. (A fresh instance waiting for its start-spread place finds it
  // again from the run's shape.) A checkpoint written while it runs on has none.
  if (moving && waiting(in) && in.next == Instance::Next::kStep) {
    cp.wake_ms = in.wake_ms;
  } else if (moving && cp.step_started_ms != 0) {
    cp.wake_ms = unix_ms_now();
  }
  return cp;
}

bool Engine::waiting(const Instance& in) const {
  // kRunStep outside a load run: a fresh instance waiting for its place in the start spread.
  return in.wake_token != 0 && in.run->sink == nullptr && in.next != Instance::Next::kTimedOut &&
         !in.branch && !forks_.contains(in.serial);
}

void Engine::rewind(const scenario::Scenario& sc, ipc::Checkpoint& cp) {
  const std::optional<size_t>& at = sc.steps[cp.step].resume_at;
  if (!at || *at >= cp.step) return;
  cp.step = static_cast<uint32_t>(*at);
  cp.attempts = cp.tries = 0;
  cp.step_started_ms = cp.deadline_ms = cp.wake_ms = 0;
}

void Engine::release(const Instance& in) {
  // Only a step that started holds anything; and once an instance passed the last step of its
  // list, cp.step names the first step of another list (Scenario::steps is flat).
  if (in.cp.step_started_ms != 0 && in.cp.step < in.run->runners.size()) {
    in.runner().left(*this, in);
  }
  for (auto& [runner, state] : states_) {
    if (state) state->instance_gone(in.serial);
  }
}

void Engine::drop(std::unordered_map<uint64_t, std::unique_ptr<Instance>>::iterator it) {
  if (it->second->branch) {
    drop_branch(it->first);
    return;
  }
  release(*it->second);
  it->second->run->active -= 1;
  if (!it->second->run->next_callback.empty()) it->second->run->serials.erase(it->second->index);
  timeouts_.erase(it->first);
  rows_.erase(it->first);
  instances_.erase(it);  // its pending wake-up, if any, finds nothing (on_wake)
}

nlohmann::json Engine::take_all() {
  nlohmann::json out = nlohmann::json::object();
  std::vector<uint64_t> serials;  // (releasing an instance drops its branches)
  for (auto& [serial, in] : instances_) {
    if (in->branch) continue;  // in its instance's checkpoint
    serials.push_back(serial);
    if (in->run->sink != nullptr) continue;
    out[in->run->id][std::to_string(in->index)] = ipc::to_json(checkpoint_of(*in, true));
  }
  for (uint64_t serial : serials) release(*instances_.at(serial));
  instances_.clear();
  timeouts_.clear();
  forks_.clear();
  branch_of_.clear();
  rows_.clear();
  for (auto& [id, r] : runs_) r->active = 0;
  return out;
}

nlohmann::json Engine::take_waiting(size_t max, size_t& taken) {
  nlohmann::json out = nlohmann::json::object();
  taken = 0;
  for (auto it = instances_.begin(); it != instances_.end() && taken < max;) {
    const Instance& in = *it->second;
    if (!waiting(in)) {
      ++it;
      continue;
    }
    out[in.run->id][std::to_string(in.index)] = ipc::to_json(checkpoint_of(in, true));
    ++taken;
    auto next = std::next(it);
    drop(it);
    it = next;
  }
  return out;
}

}  // namespace corral::worker
