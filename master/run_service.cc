// Submitted runs become runs here: those of POST /runs and those a schedule fires. Creating a
// run costs the same for ten instances or a million: an instance gets its record only when it is
// placed (master/instance_table.h).
#include "master/run_service.h"

#include <spdlog/spdlog.h>

#include "master/api_body.h"
#include "master/journal/journal.h"
#include "shared/api/runs.h"
#include "shared/ipc/control.h"
#include "shared/proc.h"

namespace corral::master {

void respond_journaled(journal::Journal* journal, const http::Responder& respond, int status,
                       nlohmann::json body) {
  if (journal == nullptr) {
    respond.send(http::Response::json(status, body));
    return;
  }
  journal->read([](journal::Store&) {},
                [journal, status, body = std::move(body), respond]() mutable {
                  journal::Journal::Health h = journal->health();
                  if (!h.ok) body["warning"] = "the journal cannot be written: " + h.error;
                  respond.send(http::Response::json(status, body));
                });
}

RunService::RunService(uv_loop_t* loop, const config::Config& cfg, const Secrets& secrets,
                       Runs& runs, Dispatcher& dispatcher, WorkerLink& workers)
    : loop_(loop),
      cfg_(cfg),
      secrets_(secrets),
      runs_(runs),
      dispatcher_(dispatcher),
      workers_(workers) {}

void RunService::attach(journal::Journal* journal, std::string callback_key) {
  journal_ = journal;
  callback_key_ = std::move(callback_key);
}

Run& RunService::submit(Submission sub) {
  const int64_t now = unix_ms_now();
  // A schedule's tick is recorded in the same journal write as the run's row (schedules.h).
  Run& run = runs_.create(std::move(sub.scenario), std::move(sub.vars), sub.count, now,
                          sub.priority, sub.tick ? fire_write(*sub.tick, now) : nullptr, sub.data);
  spdlog::info("run {}: {} instances of \"{}\" submitted", run.id, sub.count, run.scenario->name);
  warn_unverified("run", run.id, scenario::unverified_steps(*run.scenario, cfg_.tls));
  if (sub.tick && journal_) {
    run.held = true;
    release_when_journaled(run.id);
  }
  workers_.place_soon();
  if (sub.respond) respond_journaled(journal_, *sub.respond, 201, api::to_json(answer_of(run)));
  return run;
}

// The answer to POST /runs; respond_journaled adds its warning.
api::SubmitAnswer RunService::answer_of(const Run& run) const {
  api::SubmitAnswer a;
  a.run = run.id;
  a.instances = run.size;
  if (run.data.is_object()) {
    api::DataRows& rows = a.data.emplace();
    rows.rows = run.data.value("rows", uint64_t{0});
    rows.skipped = run.data.value("skipped", uint64_t{0});
    for (const auto& b : run.data.value("bad", nlohmann::json::array())) {
      rows.bad.push_back({b.value("line", uint64_t{0}), b.value("error", "")});
    }
  }
  return a;
}

// A schedule's run starts only once the journal holds it with its tick: should the daemon die
// before, none of its instances has reached a target, and at the next start the tick is a missed
// one (schedules.h). While the journal cannot be written, the run waits, looking again after
// each of the journal's retries.
void RunService::release_when_journaled(const std::string& run_id) {
  auto committed = std::make_shared<bool>(false);
  // The read runs on the journal's thread right after the writes queued before it were tried.
  journal::Journal* journal = journal_;
  journal_->read([journal, committed](journal::Store&) { *committed = journal->health().ok; },
                 [this, committed, run_id] {
                   Run* run = runs_.find(run_id);
                   if (run == nullptr || !run->held) return;
                   if (!*committed) {
                     release_when_journaled(run_id);
                     return;
                   }
                   run->held = false;
                   workers_.place_soon();
                 });
}

void RunService::stop_on_workers(const std::string& run_id) {
  workers_.send_to_all(ipc::MessageType::kCancel, ipc::to_json(ipc::Cancel{run_id}));
}

}  // namespace corral::master
