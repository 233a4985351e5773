// Tests that ended (master/kept_loads.h): a test this host ran is kept once its target has
// stopped, so that its record holds the target's end; another host's share is forgotten a while
// after it ended; retention forgets kept tests as it forgets finished runs.
#include <spdlog/spdlog.h>

#include <csignal>

#include "master/load_service.h"
#include "shared/ipc/load_stats.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

// Retention runs this often, and whenever a kept test passes the count.
constexpr int64_t kPruneEveryMs = 60000;
// Another host's share is forgotten this long after it ended: until then a late look at the
// shares' table finds it here, and does not start it again.
constexpr int64_t kShareKeptMs = 60000;

}  // namespace

void LoadService::keep_ended() { keep_ended_at(unix_ms_now(), false); }

void LoadService::keep_ended_at(int64_t now, bool all) {
  std::vector<std::string> done;
  for (const LoadTest* t : loads_.list()) {
    if (!t->ended() || targets_.count(t->id) != 0) continue;
    if (all || t->origin.empty() || now - t->ended_ms >= kShareKeptMs) done.push_back(t->id);
  }
  for (const std::string& id : done) {
    LoadTest& t = *loads_.find(id);
    if (t.origin.empty()) {
      api::LoadAnswer whole = loads_.answer(t, false, now);
      whole.series = std::move(t.series);
      if (whole.target) whole.target->series = std::move(t.target);
      kept_.keep(std::move(whole), ipc::to_json(t.total), t.created_ms, t.ended_ms);
    }
    loads_.remove(id);
  }
  if (!done.empty() && kept_.size() > static_cast<size_t>(cfg_.keep_runs)) pruned_ms_ = 0;
}

void LoadService::stop_all(const std::string& why) {
  std::vector<std::string> ids;
  for (const LoadTest* t : loads_.list()) {
    if (!t->ended() && t->origin.empty()) ids.push_back(t->id);
  }
  for (const std::string& id : ids) end(*loads_.find(id), LoadState::kStopped, why);
}

void LoadService::keep_all(const std::string& why) {
  const int64_t now = unix_ms_now();
  std::vector<std::string> ids;
  for (const LoadTest* t : loads_.list()) ids.push_back(t->id);
  for (const std::string& id : ids) {
    LoadTest& t = *loads_.find(id);
    if (!t.ended()) {
      loads_.end(t, LoadState::kStopped, why, now);
      for (int slot : std::set<int>(t.slots)) loads_.drop(t, slot, why, now);
    }
    if (auto it = targets_.find(id); it != targets_.end()) {
      note_target_end(t, {0, SIGKILL, true}, now);
      targets_.erase(it);  // kills its process group
    }
  }
  pruned_ms_ = now;  // no retention now: it would only delay the stop
  keep_ended_at(now, true);
}

void LoadService::prune_kept() {
  const int64_t now = unix_ms_now();
  if (now - pruned_ms_ < kPruneEveryMs) return;
  pruned_ms_ = now;
  const auto keep = static_cast<size_t>(std::max(cfg_.keep_runs, 0));
  const int64_t before = now - static_cast<int64_t>(cfg_.keep_runs_for_ms);
  if (size_t n = kept_.prune(keep, before); n > 0) {
    spdlog::info("retention: {} kept load tests forgotten", n);
  }
}

}  // namespace corral::master
