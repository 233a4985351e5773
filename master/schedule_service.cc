// Schedules on the master's loop: one timer, armed for the next tick of any schedule, that
// submits each due tick's run through the same path as POST /runs (RunService::submit). The
// table and its rules are schedules.h.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "master/schedule_service.h"
#include "shared/proc.h"

namespace corral::master {
namespace {
namespace schedule_service_detail {

// The longest the timer waits before it looks at the wall clock again. Timers count on the
// loop's monotonic clock and ticks on the wall clock: a clock set forward, or a host that was
// suspended, is noticed within this long (and the passed tick fires then).
constexpr int64_t kRecheckMs = 60000;

}  // namespace schedule_service_detail
}  // namespace

void ScheduleService::restore(journal::Journal* journal,
                              const std::vector<journal::ScheduleRow>& rows, int64_t now_ms) {
  journal_ = journal;
  table_.attach(journal);
  catch_up_ = table_.restore(rows, now_ms);
}

void ScheduleService::start() {
  timer_ = std::make_unique<uv::Timer>(loop_);
  std::vector<ScheduleTick> ticks;
  ticks.swap(catch_up_);
  for (const ScheduleTick& t : ticks) fire(t);
  arm();
}

void ScheduleService::arm() {
  if (!timer_) return;
  const std::optional<int64_t> next = table_.next_due();
  if (!next) {
    timer_->stop();
    return;
  }
  // One more ms: the loop's clock can be a ms ahead of the wall clock's. A timer that still
  // comes early finds nothing due and arms again.
  const int64_t delay =
      std::clamp<int64_t>(*next - unix_ms_now() + 1, 0, schedule_service_detail::kRecheckMs);
  timer_->start(static_cast<uint64_t>(delay), 0, [this] { fire_due(); });
}

void ScheduleService::fire_due() {
  // A stopping daemon fires nothing: its ticks count as missed at the next start.
  if (workers_.stopping()) return;
  for (const ScheduleTick& t : table_.due(unix_ms_now())) fire(t);
  arm();
}

void ScheduleService::fire(const ScheduleTick& tick) {
  const Schedule* s = table_.find(tick.name);
  if (s == nullptr) return;
  if (auto refused = runs_.refuse(s->instances)) {
    table_.skipped(tick, refused->why);
    return;
  }
  const Run& run =
      runs_.submit({s->scenario, s->vars, s->instances, std::nullopt, s->priority, tick, nullptr});
  table_.fired(tick, run.id, run.created_ms);
  spdlog::info("schedule {}: the tick at {} fired run {}", tick.name, iso8601_utc(tick.tick_ms),
               run.id);
}

}  // namespace corral::master
