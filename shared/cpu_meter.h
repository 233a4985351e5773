// CPU use of processes from successive readings of their CPU time (user + system, in clock ticks
// from /proc/<pid>/stat: shared/proc.h). The master samples its workers with it for GET
// /workers; `corral monit` samples them itself. Pure: the caller passes the readings and the
// time. One thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

namespace corral {

class CpuMeter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit CpuMeter(long ticks_per_second) : ticks_per_second_(ticks_per_second) {}

  // Records `ticks`, the CPU time of `pid` at `now` (nullopt: it could not be read), and returns
  // the percent of one CPU the process used since its previous reading; nullopt for its first
  // reading, an unreadable one, or when no time has passed.
  std::optional<double> update(long pid, std::optional<uint64_t> ticks, Clock::time_point now);
  // Forgets every pid not in `pids` (processes that have been replaced).
  void keep_only(const std::set<long>& pids);

 private:
  struct Reading {
    uint64_t ticks;
    Clock::time_point at;
  };
  long ticks_per_second_;
  std::map<long, Reading> last_;
};

}  // namespace corral
