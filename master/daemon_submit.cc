// Submitted runs become runs here: those of POST /runs and those a schedule fires. A run's table
// of instance records is built a slice per loop turn: in one callback, a million records (150 MB)
// held the loop for 0.6 to 1 s (page faults, on a VM) while probes, heartbeats and other requests
// waited. Runs are created in the order they were submitted, so a small run sent after a large
// one waits for it (a few turns).
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
      if (s.respond) {
        s.respond->send(
            http::Response::error(503, "the daemon is stopping; runs are not accepted"));
      } else if (s.tick) {
        // Not journaled: at the next start, the tick counts as missed.
        spdlog::warn("schedule {}: the tick at {} did not fire: the daemon is stopping",
                     s.tick->name, iso8601_utc(s.tick->tick_ms));
      }
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

// tls.verify false is meant for a throwaway test host: said once per run, so that it is not
// left on by mistake.
void Daemon::warn_unverified(std::string_view what, const std::string& id,
                             const std::vector<std::string>& steps) const {
  if (steps.empty()) return;
  std::string names;
  for (const std::string& n : steps) names += (names.empty() ? "\"" : ", \"") + n + "\"";
  spdlog::warn("{} {}: tls.verify is false for step {}: the server's certificate is not checked",
               what, id, names);
}

void Daemon::publish_run(Submission& sub) {
  const int64_t now = unix_ms_now();
  // A schedule's tick is recorded in the same journal write as the run's row (schedules.h).
  Run& run = runs_.create(std::move(sub.scenario), std::move(sub.vars), sub.count, now,
                          std::move(sub.instances), sub.priority,
                          sub.tick ? fire_write(*sub.tick, now) : nullptr, sub.data);
  spdlog::info("run {}: {} instances of \"{}\" submitted", run.id, sub.count, run.scenario->name);
  warn_unverified("run", run.id, scenario::unverified_steps(*run.scenario, cfg_.tls));
  if (sub.tick) {
    schedules_.fired(*sub.tick, run.id, now);
    spdlog::info("schedule {}: the tick at {} fired run {}", sub.tick->name,
                 iso8601_utc(sub.tick->tick_ms), run.id);
    if (journal_) {
      run.held = true;
      release_when_journaled(run.id);
    }
  }
  schedule_pump();
  if (sub.respond) {
    nlohmann::json answer = {{"run", run.id}, {"instances", sub.count}};
    if (sub.data.is_object()) {
      answer["data"] = {
          {"rows", sub.data["rows"]}, {"skipped", sub.data["skipped"]}, {"bad", sub.data["bad"]}};
    }
    respond_journaled(*sub.respond, 201, std::move(answer));
  }
}

// A schedule's run starts only once the journal holds it with its tick: should the daemon die
// before, none of its instances has reached a target, and at the next start the tick is a missed
// one (schedules.h). While the journal cannot be written, the run waits, looking again after
// each of the journal's retries.
void Daemon::release_when_journaled(const std::string& run_id) {
  auto committed = std::make_shared<bool>(false);
  // The read runs on the journal's thread right after the writes queued before it were tried.
  journal::Journal* journal = journal_.get();
  journal_->read([journal, committed](journal::Store&) { *committed = journal->health().ok; },
                 [this, committed, run_id] {
                   Run* run = runs_.find(run_id);
                   if (run == nullptr || !run->held) return;
                   if (!*committed) {
                     release_when_journaled(run_id);
                     return;
                   }
                   run->held = false;
                   schedule_pump();
                 });
}

void Daemon::respond_journaled(const http::Responder& respond, int status, nlohmann::json body) {
  if (!journal_) {
    respond.send(http::Response::json(status, body));
    return;
  }
  journal_->read([](journal::Store&) {},
                 [this, status, body = std::move(body), respond]() mutable {
                   journal::Journal::Health h = journal_->health();
                   if (!h.ok) body["warning"] = "the journal cannot be written: " + h.error;
                   respond.send(http::Response::json(status, body));
                 });
}

}  // namespace corral::master
