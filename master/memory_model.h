// How many instances a worker may hold within its memory budget. Each heartbeat brings a
// worker's RSS, its RSS when it said ready (idle) and how many instances it holds; the model
// learns from them what one instance costs, and gives each worker the count that fits in its
// budget. The dispatcher places no more than that, so a large run waits in the master's queue
// instead of pushing workers over max_memory (which replaces them: a restart storm).
//
// The cost is taken at each worker's fullest sample, (RSS - idle) / instances, once it holds at
// least kMinSample: RSS rarely shrinks when instances end (the allocator keeps the pages), so
// samples taken below the peak would overstate it. Until a worker has measured it, the last
// measured cost serves, and before any, kInitialBytes (on the high side). Pure; loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace corral::master {

class MemoryModel {
 public:
  // The memory a worker may fill, idle RSS included; 0: no budget (no memory limit at all).
  explicit MemoryModel(uint64_t budget_bytes = 0) : budget_(budget_bytes) {}

  void set_budget(uint64_t budget_bytes) { budget_ = budget_bytes; }
  uint64_t budget() const { return budget_; }

  // A heartbeat of `slot`'s worker.
  void sample(int slot, uint64_t rss, uint64_t idle_rss, uint64_t instances);
  // `slot`'s worker is gone; what it measured is kept as the last cost.
  void forget(int slot);

  // Bytes one instance costs, as measured (or kInitialBytes before any measure).
  uint64_t bytes_per_instance() const;
  bool measured() const { return last_cost_ != 0 || cost_of_live_workers() != 0; }
  // Instances `slot` may hold in all; UINT64_MAX without a budget.
  uint64_t capacity(int slot) const;

  // Instances, to measure the cost: fewer say more about the allocator than about instances. Low
  // enough that the first guess lets a worker with a small budget reach it.
  static constexpr uint64_t kMinSample = 256;
  static constexpr uint64_t kInitialBytes = 4096;   // the cost before any measure
  static constexpr uint64_t kIdleGuess = 16 << 20;  // a worker's idle RSS before its first beat

 private:
  struct Worker {
    uint64_t idle = 0;
    uint64_t peak = 0;  // the most instances seen at once
    uint64_t cost = 0;  // bytes per instance at that peak; 0: not measured
  };
  uint64_t cost_of_live_workers() const;

  uint64_t budget_;
  std::map<int, Worker> workers_;
  uint64_t last_cost_ = 0;  // of workers gone
  uint64_t last_idle_ = 0;
};

}  // namespace corral::master
