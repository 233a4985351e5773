#include "shared/cpu_meter.h"

namespace corral {

std::optional<double> CpuMeter::update(long pid, std::optional<uint64_t> ticks,
                                       Clock::time_point now) {
  auto last = last_.find(pid);
  if (!ticks) {
    if (last != last_.end()) last_.erase(last);
    return std::nullopt;
  }
  std::optional<double> percent;
  if (last != last_.end() && now > last->second.at && *ticks >= last->second.ticks) {
    const double cpu_s =
        static_cast<double>(*ticks - last->second.ticks) / static_cast<double>(ticks_per_second_);
    percent = 100 * cpu_s / std::chrono::duration<double>(now - last->second.at).count();
  }
  last_[pid] = {*ticks, now};
  return percent;
}

void CpuMeter::keep_only(const std::set<long>& pids) {
  std::erase_if(last_, [&](const auto& entry) { return !pids.count(entry.first); });
}

}  // namespace corral
