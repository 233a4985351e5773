#include "master/dispatcher.h"

#include <algorithm>
#include <map>

#include "shared/ipc/checkpoint.h"
#include "shared/ipc/control.h"
#include "shared/proc.h"

namespace corral::master {

using nlohmann::json;

namespace {
// Below this difference from the mean, loads count as even whatever their ratio.
constexpr uint64_t kMinImbalance = 4;
}  // namespace

void Dispatcher::worker_ready(int slot) { workers_[slot] = Worker{}; }

void Dispatcher::worker_gone(int slot) {
  workers_.erase(slot);
  memory_.forget(slot);
}

uint64_t Dispatcher::cap(int slot) const {
  return std::min<uint64_t>(limit_ != 0 ? limit_ : UINT32_MAX, memory_.capacity(slot));
}

uint64_t Dispatcher::room(int slot) const {
  auto it = workers_.find(slot);
  // While the instances of the slot's dead worker go back to the queue, they still name the
  // slot: none is placed there until they all have.
  if (it == workers_.end() || runs_.requeuing(slot) || (holds_ && holds_(slot))) return 0;
  uint64_t c = cap(slot);
  return c > it->second.load ? c - it->second.load : 0;
}

Dispatcher::Blocked Dispatcher::blocked() const {
  if (workers_.empty()) return {"no_worker", "no worker is ready"};
  if (capacity() > 0) return {};
  if (holds_ && std::all_of(workers_.begin(), workers_.end(),
                            [this](const auto& w) { return holds_(w.first); })) {
    return {"reload", "a reload is replacing the workers: queued instances wait for the new ones"};
  }
  const uint64_t limit = limit_ != 0 ? limit_ : UINT32_MAX;
  bool memory = false;
  for (const auto& [slot, w] : workers_) memory = memory || memory_.capacity(slot) < limit;
  if (!memory) {
    return {"worker_instances",
            "every worker holds worker_instances (" + std::to_string(limit_) + ") instances"};
  }
  const uint64_t per = memory_.capacity(workers_.begin()->first);
  return {"memory", "every worker holds what fits in its memory budget: about " +
                        std::to_string(per) + " instances of " +
                        std::to_string(memory_.bytes_per_instance()) + " bytes" +
                        (memory_.measured() ? "" : " (a first guess, not measured yet)") +
                        " in " + std::to_string(memory_.budget() >> 20) + " MiB"};
}

void Dispatcher::instance_done(int slot) {
  auto it = workers_.find(slot);
  if (it != workers_.end() && it->second.load > 0) it->second.load -= 1;
}

uint32_t Dispatcher::load(int slot) const {
  auto it = workers_.find(slot);
  return it == workers_.end() ? 0 : it->second.load;
}

uint64_t Dispatcher::held() const {
  uint64_t n = 0;
  for (const auto& [slot, w] : workers_) n += w.load;
  return n;
}

size_t Dispatcher::capacity() const {
  size_t n = 0;
  for (const auto& [slot, w] : workers_) n += room(slot);
  return n;
}

int Dispatcher::least_loaded() const {
  int best = -1;
  uint32_t best_load = UINT32_MAX;
  for (const auto& [slot, w] : workers_) {
    if (w.load < best_load && room(slot) > 0) {
      best = slot;
      best_load = w.load;
    }
  }
  return best;
}

void Dispatcher::forget_run(const Run& run) {
  run.instances.each(run.size, [this](uint32_t, const InstanceRecord& in) {
    if (in.state == InstanceState::kRunning) instance_done(in.worker);
  });
  for (auto& [slot, w] : workers_) w.defined.erase(run.id);
}

namespace {
// The checkpoints of up to `room` requeued instances of `run`, taken off its queue (their
// indexes added to `taken`), written into `start`. It stops early, after a few at least, when
// `slice` is over.
void resume_points(Run& run, size_t room, std::vector<uint32_t>& taken, ipc::StartWriter& start,
                   const uv::Slice* slice) {
  while (!run.requeued.empty() && taken.size() < room) {
    if (slice != nullptr && taken.size() % 16 == 15 && slice->over()) break;
    uint32_t i = run.requeued.front();
    run.requeued.pop_front();
    InstanceRecord& in = run.instances.at(i);
    if (in.state != InstanceState::kQueued) continue;
    taken.push_back(i);
    // The call of the instance's callback step that the master holds, if any: the worker that
    // dies after it heard of it takes it along.
    const auto called = run.callbacks.find(i);
    const json* callback = called != run.callbacks.end() ? &called->second : nullptr;
    if (const auto& held = in.detail().checkpoint) {
      // Handed back by a stopping worker, or the last progress report of the step: its
      // attempt and retry counts, deadline and start go on from there. It is kept until the
      // step ends: if this worker dies too, the next resume starts from it again.
      if (callback == nullptr) {
        start.add(i, *held);
      } else {
        ipc::Checkpoint cp = *held;
        cp.callback = *callback;
        start.add(i, cp);
      }
      continue;
    }
    ipc::Checkpoint cp;
    cp.step = in.next_step;
    cp.started_ms = in.started_ms;
    cp.vars = in.detail().vars;
    // The step began when the previous one ended (or when the instance started): resuming
    // keeps that start, so a sleep ends and a poll times out when they would have.
    const auto& steps = in.detail().steps;
    cp.step_started_ms = steps.empty() ? in.started_ms : steps.back().ended_ms;
    if (uint64_t limit = run.scenario->steps[in.next_step].limit_ms) {
      cp.deadline_ms = cp.step_started_ms + static_cast<int64_t>(limit);
    }
    if (callback != nullptr) cp.callback = *callback;
    start.add(i, cp);
  }
}

}  // namespace

bool Dispatcher::place(Run& run, int slot, Worker& w, size_t budget, size_t& placed,
                       const uv::Slice* slice) {
  size_t room = std::min<size_t>({budget, chunk_, this->room(slot)});
  if (!w.defined.count(run.id)) {
    if (before_define_) before_define_(run);
    ipc::DefineRun define{run.id,
                          run.scenario->source,
                          run.vars,
                          run.size,
                          run.created_ms,
                          run.priority,
                          run.data.is_object() ? run.data : json()};
    if (!send_(slot, ipc::MessageType::kDefineRun, ipc::Payload(ipc::to_json(define)))) {
      return false;
    }
    w.defined.insert(run.id);
  }
  std::vector<uint32_t> taken;
  std::string start;
  if (!run.requeued.empty()) {
    ipc::StartWriter writer(run.id);
    resume_points(run, room, taken, writer, slice);
    start = writer.finish();
  } else {
    uint32_t count = static_cast<uint32_t>(std::min<size_t>(room, run.fresh_count()));
    uint32_t first = run.fresh_first();
    for (uint32_t k = 0; k < count; ++k) taken.push_back(first + k);
    run.take_fresh(count);
    start = ipc::to_json(ipc::Start{run.id, first, count, nullptr}).dump();
  }
  if (taken.empty()) return true;
  if (!send_(slot, ipc::MessageType::kStart, ipc::Payload::text(std::move(start)))) {
    // Put them back: they were not sent.
    for (uint32_t i : taken) run.requeued.push_back(i);
    return false;
  }
  runs_.mark_running(run, taken, slot, unix_ms_now());
  w.load += static_cast<uint32_t>(taken.size());
  placed += taken.size();
  return true;
}

namespace {
// A run's share so far: its running instances per unit of priority.
double level_of(const Run& r) {
  return static_cast<double>(r.count(InstanceState::kRunning)) / std::max<uint32_t>(1, r.priority);
}
}  // namespace

Run* Dispatcher::fairest(double& runner_up) const {
  Run* best = nullptr;
  runner_up = -1;
  for (const auto& r : runs_.all()) {
    if (r->cancelled || r->held || !r->quarantine.empty() || r->pending() == 0) continue;
    const double level = level_of(*r);
    if (best == nullptr || level < level_of(*best)) {
      if (best != nullptr) runner_up = level_of(*best);
      best = r.get();
    } else if (runner_up < 0 || level < runner_up) {
      runner_up = level;
    }
  }
  return best;
}

bool Dispatcher::pump(size_t budget, const uv::Slice* slice) {
  size_t placed = 0;
  std::map<const Run*, size_t> spread;  // per run, from what it had waiting when this call began
  for (size_t rounds = 0; placed < budget; ++rounds) {
    if (rounds > 0 && slice != nullptr && slice->over()) return true;
    double runner_up = 0;
    Run* run = fairest(runner_up);
    if (run == nullptr) return false;
    const int slot = least_loaded();
    if (slot < 0) return false;
    // A run's instances are spread over the ready workers rather than sent to one in chunks:
    // a small run would otherwise sit on one worker until a rebalance moved half of it.
    auto [it, first] = spread.try_emplace(run, 0);
    if (first) it->second = (run->pending() + workers_.size() - 1) / workers_.size();
    size_t give = it->second;
    if (runner_up >= 0) {
      // Up to the next run's level, so that the room goes round; at least a quantum (by
      // priority), so that two large runs do not take turns one instance at a time.
      const double gap = (runner_up - level_of(*run)) * run->priority;
      give = std::min<size_t>(give, std::max<size_t>(kFairQuantum * run->priority,
                                                     static_cast<size_t>(gap) + 1));
    }
    if (!place(*run, slot, workers_[slot], std::min(budget - placed, give), placed, slice)) {
      worker_gone(slot);  // it cannot take frames: stop placing work there
      return !workers_.empty();
    }
  }
  return true;
}

void Dispatcher::rebalance(uint64_t now_ms) {
  if (workers_.size() < 2 || runs_.pending() > 0) return;
  uint64_t total = 0;
  for (const auto& [slot, w] : workers_) total += w.load;
  const uint64_t share = (total + workers_.size() - 1) / workers_.size();
  const uint64_t tolerance = std::max<uint64_t>(kMinImbalance, share / 10);
  for (auto& [slot, w] : workers_) {
    // Once over, a worker releases down to its share, not just under the tolerance.
    if (w.load <= share + (w.over_since_ms != 0 ? kMinImbalance : tolerance)) {
      w.over_since_ms = 0;
      continue;
    }
    if (w.over_since_ms == 0) w.over_since_ms = now_ms;
    if (w.releasing != 0 || now_ms < w.next_release_ms ||
        now_ms - w.over_since_ms < kOverForMs) {
      continue;
    }
    auto count = static_cast<uint32_t>(std::min<uint64_t>(w.load - share, kReleaseChunk));
    if (send_(slot, ipc::MessageType::kRelease, ipc::Payload(ipc::to_json(ipc::Release{count})))) {
      w.releasing = count;
    }
  }
}

void Dispatcher::released(int slot, size_t n, uint64_t now_ms) {
  moved_ += n;
  auto it = workers_.find(slot);
  if (it == workers_.end()) return;  // gone meanwhile: its load no longer counts
  Worker& w = it->second;
  w.load -= static_cast<uint32_t>(std::min<size_t>(n, w.load));
  if (n < w.releasing) w.next_release_ms = now_ms + kReleasePauseMs;
  w.releasing = 0;
}

}  // namespace corral::master
