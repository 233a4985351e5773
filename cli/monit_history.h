// What `corral monit` remembers from one refresh to the next: each worker's recent CPU use,
// memory, loop lag and active instances (the CPU use comes from a CpuMeter,
// shared/cpu_meter.h). Pure: the caller passes the readings and the time. One thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/api/workers.h"
#include "shared/cpu_meter.h"

namespace corral::cli {

// One worker at one refresh; a value is nullopt when it was not known (no process in the slot,
// its /proc not readable).
struct WorkerSample {
  std::optional<double> cpu_percent;  // of one CPU
  std::optional<double> rss_bytes;
  std::optional<double> loop_lag_ms;
  std::optional<double> active;  // instances the worker runs, by its last heartbeat
};

// The sample for one worker of GET /workers, with `cpu_percent` as measured.
WorkerSample sample_of(const api::WorkerEntry& worker, std::optional<double> cpu_percent);

// The last kLength samples of each worker slot, oldest first.
class WorkerHistory {
 public:
  static constexpr size_t kLength = 30;

  void add(long slot, const WorkerSample& sample);
  // Forgets every slot not in `slots` (removed by a scale down).
  void keep_only(const std::set<long>& slots);
  // One value of the slot's samples, oldest first; empty for a slot never seen.
  std::vector<std::optional<double>> series(long slot,
                                            std::optional<double> WorkerSample::*value) const;

 private:
  std::map<long, std::deque<WorkerSample>> slots_;
};

// The last `width` values as a sparkline, one character each, right-aligned (padded with spaces
// on the left when there are fewer values). Bars scale from 0 to `top` (values above it draw
// as the highest bar); an unknown value is a space. `utf8`: ▁▂▃▄▅▆▇█, else ASCII "._-=+*#@".
std::string sparkline(const std::vector<std::optional<double>>& values, double top, size_t width,
                      bool utf8);

// The largest known value of `values`, or 0.
double largest(const std::vector<std::optional<double>>& values);

}  // namespace corral::cli
