// Submitted runs become runs here. A run's table of instance records is built a slice per loop
// turn: in one callback, a million records (150 MB) held the loop for 0.6 to 1 s (page faults,
// on a VM) while probes, heartbeats and other requests waited. Runs are created in the order
// they were submitted, so a small run sent after a large one waits for it (a few turns).
#include <spdlog/spdlog.h>

#include "master/daemon_impl.h"
#include "shared/proc.h"

namespace corral::master {
namespace {
// Instance records built per turn: 1.5 MB, about 6 ms where page faults are slow (a VM).
constexpr size_t kBuildSlice = 10000;
}  // namespace

size_t Daemon::submitted_instances() const {
  size_t n = 0;
  for (const Submission& s : submissions_) n += s.count;
  return n;
}

void Daemon::submit_run(Submission sub) {
  if (submissions_.empty() && sub.count <= kBuildSlice) {
    publish_run(sub);
    return;
  }
  submissions_.push_back(std::move(sub));
  if (!build_->scheduled()) build_->schedule([this] { build_submissions(); });
}

void Daemon::build_submissions() {
  if (submissions_.empty()) return;
  Submission& sub = submissions_.front();
  if (supervisor_.shutting_down()) {
    for (Submission& s : submissions_) {
      s.respond.send(http::Response::error(503, "the daemon is stopping; runs are not accepted"));
    }
    submissions_.clear();
    return;
  }
  if (sub.instances.capacity() < sub.count) sub.instances.reserve(sub.count);
  sub.instances.resize(std::min<size_t>(sub.count, sub.instances.size() + kBuildSlice));
  if (sub.instances.size() == sub.count) {
    publish_run(sub);
    submissions_.pop_front();
  }
  if (!submissions_.empty()) build_->schedule([this] { build_submissions(); });
}

void Daemon::publish_run(Submission& sub) {
  Run& run = runs_.create(std::move(sub.scenario), std::move(sub.vars), sub.count, unix_ms_now(),
                          std::move(sub.instances), sub.priority);
  spdlog::info("run {}: {} instances of \"{}\" submitted", run.id, sub.count, run.scenario->name);
  schedule_pump();
  nlohmann::json created = {{"run", run.id}, {"instances", sub.count}};
  if (!journal_) {
    sub.respond.send(http::Response::json(201, created));
    return;
  }
  // Answer once the run is in the journal: a run the caller was told about survives a crash of
  // the master from then on.
  journal_->read([](journal::Store&) {},
                 [this, created, respond = sub.respond]() mutable {
                   journal::Journal::Health h = journal_->health();
                   if (!h.ok) created["warning"] = "the journal cannot be written: " + h.error;
                   respond.send(http::Response::json(201, created));
                 });
}

}  // namespace corral::master
