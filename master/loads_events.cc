// What happened when in a test (loads.h): thresholds first crossed by its totals, and where its
// stages began. Its end early and its target's end are recorded where they happen.
#include <algorithm>

#include "master/loads.h"

namespace corral::master {
namespace {

// A threshold is judged for an event only from this far into the test (or its abort delay):
// over the first seconds, percentiles and rates rest on too few requests.
constexpr uint64_t kSettleMs = 5000;

// What a stage's target counts: "to 200 VUs", "to 200/s", "to 5000 connections".
std::string stage_target(load::Model model, double target) {
  char n[32];
  std::snprintf(n, sizeof n, "%g", target);
  switch (model) {
    case load::Model::kOpen:
      return std::string("to ") + n + "/s";
    case load::Model::kHeld:
      return std::string("to ") + n + " connections";
    default:
      return std::string("to ") + n + " VUs";
  }
}

}  // namespace

void Loads::note_crossings(LoadTest& t) {
  const double at = t.seconds;
  for (size_t i = 0; i < t.spec.thresholds.size(); ++i) {
    const load::Threshold& th = t.spec.thresholds[i];
    // Totals that only grow (requests per second over a ramp, iterations) start out "crossed".
    if (th.metric == load::Metric::kRps || th.metric == load::Metric::kIterations) continue;
    if (t.crossed.count(i) != 0 ||
        at * 1000 < static_cast<double>(std::max(th.delay_ms, kSettleMs)))
      continue;
    if (th.holds(threshold_value(th, t, at))) continue;
    t.crossed.insert(i);
    t.events.push_back({at, "threshold", th.name + " crossed"});
  }
}

std::vector<api::LoadEvent> Loads::events_of(const LoadTest& t, double elapsed_s) {
  std::vector<api::LoadEvent> out = t.events;
  const auto& stages = t.spec.stages;
  uint64_t begins_ms = 0;
  for (size_t i = 0; i + 1 < stages.size(); ++i) {
    begins_ms += stages[i].duration_ms;
    const double at = static_cast<double>(begins_ms) / 1000;
    if (at >= elapsed_s) break;
    out.push_back({at, "stage",
                   "stage " + std::to_string(i + 2) + " of " + std::to_string(stages.size()) +
                       ": " + stage_target(t.spec.model, stages[i + 1].target)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const api::LoadEvent& a, const api::LoadEvent& b) { return a.t < b.t; });
  return out;
}

}  // namespace corral::master
