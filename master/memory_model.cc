#include "master/memory_model.h"

#include <algorithm>
#include <limits>

namespace corral::master {

void MemoryModel::sample(int slot, uint64_t rss, uint64_t idle_rss, uint64_t instances) {
  Worker& w = workers_[slot];
  if (idle_rss != 0) {
    w.idle = idle_rss;
    last_idle_ = idle_rss;
  }
  if (instances < kMinSample || instances < w.peak || w.idle == 0) return;
  w.peak = instances;
  w.cost = rss > w.idle ? std::max<uint64_t>((rss - w.idle) / instances, 1) : 1;
}

void MemoryModel::forget(int slot) {
  auto it = workers_.find(slot);
  if (it == workers_.end()) return;
  if (it->second.cost != 0) last_cost_ = it->second.cost;
  workers_.erase(it);
}

// The highest cost the live workers measured: the dearest instances decide.
uint64_t MemoryModel::cost_of_live_workers() const {
  uint64_t cost = 0;
  for (const auto& [slot, w] : workers_) cost = std::max(cost, w.cost);
  return cost;
}

uint64_t MemoryModel::bytes_per_instance() const {
  if (uint64_t live = cost_of_live_workers(); live != 0) return live;
  return last_cost_ != 0 ? last_cost_ : kInitialBytes;
}

uint64_t MemoryModel::capacity(int slot) const {
  if (budget_ == 0) return std::numeric_limits<uint64_t>::max();
  auto it = workers_.find(slot);
  uint64_t idle = it != workers_.end() && it->second.idle != 0 ? it->second.idle
                  : last_idle_ != 0                            ? last_idle_
                                                               : kIdleGuess;
  return budget_ > idle ? (budget_ - idle) / bytes_per_instance() : 0;
}

}  // namespace corral::master
