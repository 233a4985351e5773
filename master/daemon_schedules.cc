// Schedules on the master's loop: one timer, armed for the next tick of any schedule, that
// submits each due tick's run through the same path as POST /runs (daemon_submit.cc). The table
// and its rules are schedules.h.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "master/daemon_impl.h"
#include "shared/proc.h"

namespace corral::master {
namespace {
namespace daemon_schedules_detail {

// The longest the timer waits before it looks at the wall clock again. Timers count on the
// loop's monotonic clock and ticks on the wall clock: a clock set forward, or a host that was
// suspended, is noticed within this long (and the passed tick fires then).
constexpr int64_t kRecheckMs = 60000;

}  // namespace daemon_schedules_detail
}  // namespace

void Daemon::start_schedules() {
  schedule_timer_ = std::make_unique<uv::Timer>(loop_);
  std::vector<ScheduleTick> ticks;
  ticks.swap(catch_up_);
  for (const ScheduleTick& t : ticks) fire_schedule(t);
  arm_schedules();
}

void Daemon::arm_schedules() {
  if (!schedule_timer_) return;
  const std::optional<int64_t> next = schedules_.next_due();
  if (!next) {
    schedule_timer_->stop();
    return;
  }
  // One more ms: the loop's clock can be a ms ahead of the wall clock's. A timer that still
  // comes early finds nothing due and arms again.
  const int64_t delay =
      std::clamp<int64_t>(*next - unix_ms_now() + 1, 0, daemon_schedules_detail::kRecheckMs);
  schedule_timer_->start(static_cast<uint64_t>(delay), 0, [this] { fire_schedules(); });
}

void Daemon::fire_schedules() {
  // A stopping daemon fires nothing: its ticks count as missed at the next start.
  if (supervisor_.shutting_down()) return;
  for (const ScheduleTick& t : schedules_.due(unix_ms_now())) fire_schedule(t);
  arm_schedules();
}

void Daemon::fire_schedule(const ScheduleTick& tick) {
  const Schedule* s = schedules_.find(tick.name);
  if (s == nullptr) return;
  if (auto refused = refuse_run(s->instances)) {
    schedules_.skipped(tick, refused->why);
    return;
  }
  submit_run({s->scenario, s->vars, s->instances, std::nullopt, s->priority, tick, nullptr});
}

}  // namespace corral::master
