// The metrics the master counts as things happen, rather than reads from its state when
// scraped (metrics.cc does that): steps by kind and outcome with their durations, and worker
// exits by reason, hook deliveries by event and result. Their label sets are closed: step
// kinds, outcomes, exit reasons, hook events and results.
// Loop thread only.
#pragma once

#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "config/hooks.h"
#include "master/hooks/sender.h"

namespace corral::master {

class LiveMetrics {
 public:
  LiveMetrics();

  // A step ended after `seconds` (from its first try to its end; a poll's whole wait).
  void step_ended(std::string_view kind, std::string_view outcome, double seconds);
  // A worker process of a slot ended, for `reason` (exit_reason.h).
  void worker_exited(std::string_view reason);
  // A hook's delivery for `event` ended (hooks/sender.h).
  void hook_ended(config::HookEvent event, HookOutcome outcome);

  std::vector<prometheus::MetricFamily> collect() const { return registry_.Collect(); }

  // The step duration histogram's bucket bounds, in seconds: from a quick request to the
  // half-hour poll.
  static const prometheus::Histogram::BucketBoundaries& step_buckets();

 private:
  prometheus::Counter& hooks_counter(config::HookEvent event, HookOutcome outcome);

  prometheus::Registry registry_;
  prometheus::Family<prometheus::Histogram>& step_seconds_;
  prometheus::Family<prometheus::Counter>& exits_;
  prometheus::Family<prometheus::Counter>& hooks_;
};

}  // namespace corral::master
