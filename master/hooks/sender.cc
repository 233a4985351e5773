#include "master/hooks/sender.h"

#include "config/config.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "master/hooks/command.h"
#include "master/hooks/webhook.h"
#include "shared/proc.h"

namespace corral::master {

std::string_view to_string(HookOutcome o) {
  switch (o) {
#define CORRAL_HOOK_OUTCOME_CASE(name, text) \
  case HookOutcome::name:                    \
    return text;
    CORRAL_HOOK_OUTCOMES(CORRAL_HOOK_OUTCOME_CASE)
#undef CORRAL_HOOK_OUTCOME_CASE
  }
  return "unknown";
}

HookSender::HookSender(uv_loop_t* loop, Limits limits, OnOutcome on_outcome)
    : loop_(loop), limits_(limits), on_outcome_(std::move(on_outcome)) {}

HookSender::~HookSender() = default;

void HookSender::set_hooks(config::Hooks hooks) { hooks_ = std::move(hooks); }

void HookSender::fire(config::HookEvent event, const nlohmann::json& payload) {
  const std::vector<config::Hook>& hooks = hooks_.of(event);
  if (hooks.empty()) return;
  auto text = std::make_shared<const std::string>(payload.dump());
  for (const config::Hook& hook : hooks) {
    Job job{event, hook, text};
    if (gave_up_) {
      report(job, HookOutcome::kDropped, "the daemon has stopped");
      continue;
    }
    if (queue_.size() >= limits_.max_queued) {
      // The newest events say most about now; a backlog this long means hooks cannot keep up.
      Job oldest = std::move(queue_.front());
      queue_.pop_front();
      report(oldest, HookOutcome::kDropped,
             "the queue was full (" + std::to_string(limits_.max_queued) + " waiting)");
    }
    queue_.push_back(std::move(job));
  }
  pump();
}

void HookSender::pump() {
  while (running_.size() < limits_.max_in_flight && !queue_.empty()) {
    Job job = std::move(queue_.front());
    queue_.pop_front();
    start(std::move(job));
  }
}

void HookSender::start(Job job) {
  const uint64_t id = next_id_++;
  Delivery::Done done = [this, id](Status result) { on_done(id, result); };
  Result<std::unique_ptr<Delivery>> d =
      job.hook.is_webhook()
          ? start_webhook(loop_, job.hook, *job.payload, std::move(done))
          : start_command(loop_, job.hook, job.event, *job.payload, std::move(done));
  if (!d) {
    report(job, HookOutcome::kFailed, d.status().message());
    return;
  }
  running_.emplace(id, Running{std::move(job), std::move(*d)});
}

void HookSender::on_done(uint64_t id, const Status& result) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  // Kept until this returns: the delivery is the caller.
  Running ended = std::move(it->second);
  running_.erase(it);
  if (result) {
    report(ended.job, HookOutcome::kOk, "");
  } else {
    report(ended.job, HookOutcome::kFailed, result.message());
  }
  if (!gave_up_) pump();
  close_if_idle();
}

void HookSender::report(const Job& job, HookOutcome outcome, const std::string& why) {
  const std::string_view event = config::to_string(job.event);
  const std::string name = config::hook_name(job.hook);
  switch (outcome) {
    case HookOutcome::kOk:
      spdlog::info("hook {}: {} {}", event, name, job.hook.is_webhook() ? "took it" : "exited 0");
      break;
    case HookOutcome::kFailed:
      spdlog::warn("hook {}: {} failed: {}", event, name, why);
      break;
    case HookOutcome::kDropped:
      spdlog::warn("hook {}: {} dropped: {}", event, name, why);
      break;
  }
  if (on_outcome_) on_outcome_(job.event, outcome);
}

void HookSender::stop(uint64_t grace_ms) {
  const uint64_t deadline = monotonic_ms() + grace_ms;
  if (stopping_ && deadline >= stop_deadline_ms_) return;
  stopping_ = true;
  stop_deadline_ms_ = deadline;
  if (running_.empty() && queue_.empty()) {
    close_if_idle();
    return;
  }
  spdlog::info("hooks: waiting up to {} for {} running and {} queued deliveries",
               config::format_duration_ms(grace_ms), running_.size(), queue_.size());
  if (!grace_) grace_ = std::make_unique<uv::Timer>(loop_);
  grace_->start(grace_ms, 0, [this] { give_up(); });
}

void HookSender::give_up() {
  gave_up_ = true;
  while (!queue_.empty()) {
    Job job = std::move(queue_.front());
    queue_.pop_front();
    report(job, HookOutcome::kDropped, "the daemon stopped before it could start");
  }
  std::vector<uint64_t> ids;
  for (const auto& [id, r] : running_) ids.push_back(id);
  for (uint64_t id : ids) {
    // An abort may end the delivery at once, erasing it.
    if (auto it = running_.find(id); it != running_.end()) it->second.delivery->abort();
  }
  close_if_idle();
}

void HookSender::close_if_idle() {
  if (!stopping_ || !running_.empty() || !queue_.empty()) return;
  // The grace timer alone must not keep a stopping daemon's loop running; with it gone, nothing
  // would bound a later delivery.
  grace_.reset();
  gave_up_ = true;
}

}  // namespace corral::master
