// Load tests on the workers: a checked test starts on the ready workers (once there are as many
// as it needs), their seconds are added up as they come, and it ends by its duration, a
// threshold with abort_on_fail, its target's watch, or a request.
#include "master/load_service.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include "master/api_body.h"
#include "shared/ipc/control.h"
#include "shared/ipc/load_stats.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using nlohmann::json;

// Workers start a test this long after it is accepted, so that they start together.
constexpr uint64_t kStartDelayMs = 200;
// How long a test waits for the workers it needs to start.
constexpr uint64_t kWorkersReadyMs = 60000;

// Held connections a worker may open: the config's load_connections_per_worker, or by default
// its file-descriptor limit (inherited from the master) less room for its own files, the IPC
// channel and the loop.
uint64_t connections_per_worker(const config::Config& cfg) {
  if (cfg.load_connections_per_worker > 0)
    return static_cast<uint64_t>(cfg.load_connections_per_worker);
  rlimit lim{};
  uint64_t soft = getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 1024;
  return soft > 4000 ? soft - 2000 : soft / 2;
}

}  // namespace

size_t workers_needed(const LoadSubmission& sub, const config::Config& cfg) {
  if (sub.spec.model != load::Model::kHeld) return 1;
  auto peak = static_cast<uint64_t>(sub.spec.peak());
  peak = peak / sub.host_count + (sub.host_index < peak % sub.host_count ? 1 : 0);
  uint64_t per = connections_per_worker(cfg);
  return static_cast<size_t>((peak + per - 1) / per);
}

void LoadService::run(LoadSubmission sub, Started started, Refused refused) {
  std::vector<int> ready = workers_.ready_workers();
  size_t need = workers_needed(sub, cfg_);
  if (ready.empty() && sub.spec.model != load::Model::kHeld) {
    refused("no worker is ready to run a load test");
    return;
  }
  if (ready.size() >= need && !ready.empty()) {
    started(launch(std::move(sub), ready));
    return;
  }
  // More workers than there are: the count goes up for this test, which starts once they are
  // ready (the request is answered then).
  if (base_wanted_ < 0) base_wanted_ = workers_.wanted();
  if (static_cast<size_t>(workers_.wanted()) < need) {
    spdlog::info("load: {} held connections need {} workers; starting {} more",
                 int64_t(sub.spec.peak()), need, need - workers_.wanted());
    workers_.set_wanted(static_cast<int>(need));
  }
  pending_.push_back({std::move(sub), std::move(started), std::move(refused),
                      std::max<size_t>(need, 1), monotonic_ms() + kWorkersReadyMs});
}

void LoadService::on_tick() {
  keep_ended();
  prune_kept();
  if (pending_.empty() && base_wanted_ < 0) return;  // the usual tick: nothing more to do
  const uint64_t now = monotonic_ms();
  std::vector<int> ready = workers_.ready_workers();
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (ready.size() >= it->need) {
      Pending p = std::move(*it);
      it = pending_.erase(it);
      p.started(launch(std::move(p.sub), ready));
    } else if (now >= it->deadline_ms || workers_.stopping()) {
      Pending p = std::move(*it);
      it = pending_.erase(it);
      p.refused("the test needs " + std::to_string(p.need) + " workers and " +
                std::to_string(ready.size()) + " are ready after " +
                config::format_duration_ms(kWorkersReadyMs));
    } else {
      ++it;
    }
  }
  if (base_wanted_ < 0 || !pending_.empty()) return;
  for (const LoadTest* t : loads_.list()) {
    if (!t->ended() && t->workers > static_cast<size_t>(base_wanted_)) return;
  }
  spdlog::info("load: back to {} workers", base_wanted_);
  workers_.set_wanted(base_wanted_);
  base_wanted_ = -1;
}

LoadTest& LoadService::launch(LoadSubmission sub, const std::vector<int>& ready) {
  const int64_t now = unix_ms_now();
  const int64_t start =
      sub.start_ms != 0 ? std::max(now, sub.start_ms) : now + int64_t{kStartDelayMs};
  std::set<int> slots(ready.begin(), ready.end());
  for (uint32_t i = 1; i < sub.hosts.size(); ++i) slots.insert(Loads::host_slot(i));
  LoadTest& t = loads_.add(sub.id, sub.scenario, sub.vars, sub.load, std::move(sub.spec),
                           std::move(slots), now, start);
  t.workers = ready.size();
  t.step_kinds = std::move(sub.step_kinds);
  t.origin = sub.origin;
  t.host_index = sub.host_index;
  t.host_count = sub.host_count;
  for (uint32_t i = 1; i < sub.hosts.size(); ++i)
    t.remote[Loads::host_slot(i)] = {sub.hosts[i], ""};
  for (size_t i = 0; i < ready.size(); ++i) {
    ipc::LoadStart start_msg{t.id,
                             t.scenario,
                             t.vars,
                             t.load,
                             static_cast<uint32_t>(i),
                             static_cast<uint32_t>(ready.size()),
                             t.host_index,
                             t.host_count,
                             static_cast<uint64_t>(start - now)};
    if (!workers_.send_to(ready[i], ipc::MessageType::kLoadStart, ipc::to_json(start_msg))) {
      loads_.worker_gone(ready[i], unix_ms_now());
    }
  }
  if (t.spec.watch.any()) start_watch(t);
  spdlog::info("load {}: \"{}\" ({} model, {}) on {} workers{}", t.id, t.name,
               load::to_string(t.spec.model), config::format_duration_ms(t.spec.duration_ms()),
               ready.size(),
               t.host_count > 1 ? fmt::format(", share {} of {} hosts", t.host_index, t.host_count)
                                : std::string());
  warn_unverified("load", t.id, sub.unverified);
  return t;
}

void LoadService::start_watch(const LoadTest& t) {
  auto watch = std::make_unique<TargetWatch>(loop_, t.spec.watch, [this, id = t.id](json sample) {
    on_target_sample(id, std::move(sample));
  });
  watch->start();
  watches_[t.id] = std::move(watch);
}

void LoadService::on_target_sample(const std::string& id, json sample) {
  LoadTest* t = loads_.find(id);
  if (t == nullptr || t->ended()) {
    stop_target_after(id);  // the test is over
    watches_.erase(id);  // the watch calls this last: it may go now
    return;
  }
  copy_target(*t);
  auto reason = loads_.on_target(*t, std::move(sample), unix_ms_now());
  if (!reason) return;
  const bool died = t->target_event.value("event", "") == "died";
  end(*t, died ? LoadState::kAborted : LoadState::kStopped, *reason);
}

// Ends `t` early as `state`, asking its workers to stop.
void LoadService::end(LoadTest& t, LoadState state, const std::string& reason) {
  std::set<int> slots = t.slots;
  if (!loads_.end(t, state, reason, unix_ms_now())) return;
  spdlog::info("load {}: {}", t.id, reason);
  for (int slot : slots) {
    if (slot < 0) continue;
    (void)workers_.send_to(slot, ipc::MessageType::kLoadStop, ipc::to_json(ipc::LoadStop{t.id}));
  }
  if (!t.remote.empty() && load_shares_) load_shares_->stop(t.id);
}

Status LoadService::on_load_stats(int slot, const nlohmann::json& payload) {
  auto second = ipc::load_second_from_json(payload);
  if (!second) return Status(Code::kProtocol, "load_stats: " + second.status().message());
  std::string id = second->load;
  if (loads_.find(id) == nullptr && kept_.find(id) != nullptr) return Status::ok();  // late
  if (Status s = loads_.on_second(slot, std::move(*second), unix_ms_now()); !s) return s;
  check_aborting(id);
  stop_target_after(id);
  return Status::ok();
}

void LoadService::check_aborting(const std::string& id) {
  LoadTest* t = loads_.find(id);
  if (t == nullptr || t->ended() || t->ending) return;
  auto crossed = loads_.crossed_aborting(*t, unix_ms_now());
  if (!crossed.empty())
    end(*t, LoadState::kAborted, "aborted: " + crossed[0].threshold->name + " crossed");
}

}  // namespace corral::master
