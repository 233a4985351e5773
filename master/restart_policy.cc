#include "master/restart_policy.h"

#include <algorithm>
#include <cmath>

namespace corral::master {
namespace {

uint64_t backoff_delay(const RestartPolicy& p, int consecutive, double unit_random) {
  double base = static_cast<double>(p.backoff_initial_ms) *
                std::pow(p.backoff_factor, std::max(0, consecutive - 1));
  base = std::min(base, static_cast<double>(p.backoff_max_ms));
  double jittered = base * (1.0 + p.jitter * (2.0 * unit_random - 1.0));
  return static_cast<uint64_t>(std::clamp(jittered, 0.0, static_cast<double>(p.backoff_max_ms)));
}

std::string seconds(uint64_t ms) { return std::to_string(ms / 1000) + "s"; }

}  // namespace

RestartDecision decide_restart(const RestartPolicy& policy, RestartHistory& history,
                               const ExitInfo& exit, uint64_t now_ms, uint64_t ready_for_ms,
                               double unit_random) {
  if (exit.reason == ExitReason::kStopped) return {};

  if (ready_for_ms >= policy.stable_after_ms) {
    history = RestartHistory{};
    return {false, 0, ""};
  }

  if (history.consecutive == 0) history.first_unstable_ms = now_ms;
  history.consecutive += 1;

  if (exit.reason == ExitReason::kInitFailed) {
    return {true, policy.errored_retry_ms,
            "cannot initialise: " + describe(exit) + "; retrying every " +
                seconds(policy.errored_retry_ms)};
  }
  if (history.consecutive >= policy.crash_loop_exits) {
    return {true, policy.errored_retry_ms,
            "crash loop: " + std::to_string(history.consecutive) + " exits in a row in " +
                seconds(now_ms - history.first_unstable_ms) + ", last: " + describe(exit) +
                "; retrying every " + seconds(policy.errored_retry_ms)};
  }
  return {false, backoff_delay(policy, history.consecutive, unit_random), ""};
}

}  // namespace corral::master
