// The master's side of per-target limits (limit_service.h).
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <spdlog/spdlog.h>

#include "master/limit_service.h"

namespace corral::master {

void LimitService::worker_ready(int slot) {
  shares_.worker_ready(slot);
  refresh();  // (the daemon's own limits are in force from the first worker on)
}

void LimitService::worker_gone(int slot) {
  shares_.worker_gone(slot);
  push();
}

Status LimitService::on_use(int slot, const nlohmann::json& use, uint64_t now_ms) {
  auto uses = ipc::limit_uses_from_json(use);
  if (!uses) return protocol_error("heartbeat: malformed limits");
  shares_.report(slot, *uses, now_ms);
  push();
  return Status::ok();
}

void LimitService::before_define(const Run& run) {
  if (run.scenario->limits.empty() || !limited_runs_.insert(run.id).second) return;
  refresh();
}

void LimitService::refresh() {
  std::map<ipc::LimitKey, config::TargetLimit> limits;
  for (const config::TargetLimit& l : cfg_.limits) limits[{"", l.origin}] = l;
  std::erase_if(limited_runs_, [this](const std::string& id) {
    const Run* run = runs_.find(id);
    return run == nullptr || run->finished();
  });
  for (const std::string& id : limited_runs_) {
    const Run& run = *runs_.find(id);
    auto resolved = scenario::run_limits(*run.scenario, run.vars);
    if (!resolved) {
      // (Checked at submission; the daemon's environment cannot change a run's vars.)
      spdlog::error("run {}: its limits are not applied: {}", id, resolved.status().message());
      continue;
    }
    for (const config::TargetLimit& l : *resolved) limits[{id, l.origin}] = l;
  }
  if (limits != shares_.limits()) shares_.set_limits(std::move(limits));
  push();
}

void LimitService::push() {
  for (const auto& [slot, table] : shares_.update()) {
    (void)workers_.send_to(slot, ipc::MessageType::kLimits, ipc::to_json(table));
  }
}

void add_limit_metrics(prometheus::Registry& registry, const LimitShares& shares) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  auto gauge = [&](const char* name, const char* help) -> auto& {
    return BuildGauge().Name(name).Help(help).Register(registry);
  };
  auto counter = [&](const char* name, const char* help) -> auto& {
    return BuildCounter().Name(name).Help(help).Register(registry);
  };
  auto& max_in_flight =
      gauge("corral_limit_max_in_flight",
            "Per-target limit: requests in flight at most (run \"\": the daemon's)");
  auto& rate = gauge("corral_limit_rate", "Per-target limit: requests started per second at most");
  auto& in_flight = gauge("corral_limit_in_flight",
                          "Requests under a per-target limit that are in flight, all workers");
  auto& waiting =
      gauge("corral_limit_waiting", "Requests held back by a per-target limit now, all workers");
  auto& started = counter("corral_limit_started_total", "Requests a per-target limit let through");
  auto& throttled = counter("corral_limit_throttled_total",
                            "Requests that waited for a per-target limit before they went");
  auto totals = shares.totals();
  for (const auto& [key, limit] : shares.limits()) {
    const prometheus::Labels labels = {{"run", key.run}, {"origin", key.origin}};
    const LimitShares::Totals& t = totals[key];
    if (limit.max_in_flight != 0) max_in_flight.Add(labels).Set(limit.max_in_flight);
    if (limit.rate != 0) rate.Add(labels).Set(limit.rate);
    in_flight.Add(labels).Set(static_cast<double>(t.in_flight));
    waiting.Add(labels).Set(static_cast<double>(t.waiting));
    started.Add(labels).Increment(static_cast<double>(t.started));
    throttled.Add(labels).Increment(static_cast<double>(t.throttled));
  }
}

}  // namespace corral::master
