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
                 .Register(registry_)) {}

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

}  // namespace corral::master
