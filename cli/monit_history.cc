#include "cli/monit_history.h"

#include <algorithm>

#include "cli/format.h"

namespace corral::cli {
namespace {

// The eight bar heights of a sparkline, lowest first.
const char* const kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
const char* const kAsciiBars[] = {".", "_", "-", "=", "+", "*", "#", "@"};

}  // namespace

WorkerSample sample_of(const api::WorkerEntry& w, std::optional<double> cpu_percent) {
  if (!w.alive()) return {cpu_percent, std::nullopt, std::nullopt, std::nullopt};
  return {cpu_percent, static_cast<double>(w.rss_bytes), w.loop_lag_ms,
          static_cast<double>(w.active)};
}

void WorkerHistory::add(long slot, const WorkerSample& sample) {
  std::deque<WorkerSample>& samples = slots_[slot];
  samples.push_back(sample);
  while (samples.size() > kLength) samples.pop_front();
}

void WorkerHistory::keep_only(const std::set<long>& slots) {
  std::erase_if(slots_, [&](const auto& entry) { return !slots.count(entry.first); });
}

std::vector<std::optional<double>> WorkerHistory::series(
    long slot, std::optional<double> WorkerSample::*value) const {
  std::vector<std::optional<double>> out;
  auto it = slots_.find(slot);
  if (it == slots_.end()) return out;
  for (const WorkerSample& s : it->second) out.push_back(s.*value);
  return out;
}

std::string sparkline(const std::vector<std::optional<double>>& values, double top, size_t width,
                      bool utf8) {
  const size_t shown = std::min(width, values.size());
  std::string out(width - shown, ' ');
  for (size_t i = values.size() - shown; i < values.size(); ++i) {
    if (!values[i]) {
      out += ' ';
      continue;
    }
    const double share = top > 0 ? *values[i] / top : 0;
    const int level = std::clamp(static_cast<int>(share * 7 + 0.5), 0, 7);
    out += utf8 ? kBars[level] : kAsciiBars[level];
  }
  return out;
}

double largest(const std::vector<std::optional<double>>& values) {
  double top = 0;
  for (const auto& v : values) {
    if (v) top = std::max(top, *v);
  }
  return top;
}

}  // namespace corral::cli
