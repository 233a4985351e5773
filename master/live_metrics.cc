#include "master/live_metrics.h"

#include <string>

namespace corral::master {

LiveMetrics::LiveMetrics()
    : step_seconds_(prometheus::BuildHistogram()
                        .Name("corral_step_duration_seconds")
                        .Help("Steps that ended, by kind and outcome, and how long each took "
                              "from its first try to its end (a poll: until its condition held)")
                        .Register(registry_)),
      exits_(prometheus::BuildCounter()
                 .Name("corral_worker_exits_total")
                 .Help("Worker processes of the slots that ended, by reason")
                 .Register(registry_)),
      hooks_(prometheus::BuildCounter()
                 .Name("corral_hooks_total")
                 .Help("Hook deliveries that ended, by event and result: ok, failed (after its "
                       "retries, or its timeout), dropped (the queue was full, or the daemon "
                       "stopped)")
                 .Register(registry_)) {
  // Every series from 0, so that the first failure is an increase that alerts can see.
  for (config::HookEvent e : config::all_hook_events()) {
    for (HookOutcome o : {HookOutcome::kOk, HookOutcome::kFailed, HookOutcome::kDropped}) {
      hooks_counter(e, o);
    }
  }
}

prometheus::Counter& LiveMetrics::hooks_counter(config::HookEvent event, HookOutcome outcome) {
  return hooks_.Add({{"event", std::string(config::to_string(event))},
                     {"result", std::string(to_string(outcome))}});
}

const prometheus::Histogram::BucketBoundaries& LiveMetrics::step_buckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};
  return kBuckets;
}

void LiveMetrics::step_ended(std::string_view kind, std::string_view outcome, double seconds) {
  step_seconds_.Add({{"kind", std::string(kind)}, {"outcome", std::string(outcome)}},
                    step_buckets())
      .Observe(seconds);
}

void LiveMetrics::worker_exited(std::string_view reason) {
  exits_.Add({{"reason", std::string(reason)}}).Increment();
}

void LiveMetrics::hook_ended(config::HookEvent event, HookOutcome outcome) {
  hooks_counter(event, outcome).Increment();
}

}  // namespace corral::master
