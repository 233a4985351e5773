// The runs part as the control API and the schedules see it: a submission (POST /runs, a
// schedule's tick) becomes a run here, and the /runs and /callbacks routes are answered here.
// It reaches the run table (runs.h), the dispatcher, the journal, the cluster's hosts and,
// through WorkerLink, the workers: nothing else of the daemon.
//   run_service.cc        submitting a run, answering once it is journaled
//   api_runs.cc           POST/GET/DELETE /runs, GET/DELETE /runs/<id>, resume
//   api_run_instances.cc  GET /runs/<id>/instances[/<n>]
//   api_run_data.cc       runs over the rows of a data file
//   api_callbacks.cc      POST /callbacks/<token>[/heartbeat]
// Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "master/api_route.h"
#include "master/dispatcher.h"
#include "master/runs.h"
#include "master/schedules.h"
#include "master/worker_link.h"
#include "shared/api/runs.h"
#include "shared/callback/token.h"
#include "shared/data/rows.h"
#include "shared/secrets.h"

namespace corral::master {

namespace journal {
class Journal;
}
namespace cluster {
class Hosts;
}

// Answers `status` with `body` once every journal write queued before has been tried: what the
// caller was told about then survives a crash of the master. The body gets a "warning" while
// the journal cannot be written. Without a journal (nullptr), answers at once.
void respond_journaled(journal::Journal* journal, const http::Responder& respond, int status,
                       nlohmann::json body);

class RunService {
 public:
  // `cfg` and `secrets` are the daemon's, which a reload replaces in place.
  RunService(uv_loop_t* loop, const config::Config& cfg, const Secrets& secrets, Runs& runs,
             Dispatcher& dispatcher, WorkerLink& workers);

  // Once the journal is open (it may be null: no journal) and the callback key is read.
  void attach(journal::Journal* journal, std::string callback_key);
  // When the journal is PostgreSQL: the hosts of the cluster (a prune is announced to them).
  void set_hosts(cluster::Hosts* hosts) { hosts_ = hosts; }
  const std::string& callback_key() const { return callback_key_; }

  // What POST /runs takes, and POST /schedules for each run: a checked scenario, its vars,
  // instances and priority.
  struct RunRequest {
    std::shared_ptr<const scenario::Scenario> scenario;
    nlohmann::json vars;
    uint32_t count = 1;
    uint32_t priority = 1;
  };
  // Reads and checks those fields of a request body; the error is the 400 answer's message,
  // naming the field at fault. `extra` are variables the scenario may use besides vars (a data
  // run's "row.<column>").
  Result<RunRequest> request(const nlohmann::json& body,
                             const std::set<std::string>& extra = {}) const;
  // Why a new run of `count` instances is refused now: 429 when the queue is full, 503 when the
  // journal has failed with journal_max_queued writes or more not saved; nothing when it is not.
  struct Refusal {
    int status;
    std::string why;
  };
  std::optional<Refusal> refuse(uint32_t count) const;

  // A run accepted by POST /runs or fired by a schedule.
  struct Submission {
    std::shared_ptr<const scenario::Scenario> scenario;
    nlohmann::json vars;
    uint32_t count = 0;
    std::optional<http::Responder> respond;  // none for a schedule's run
    uint32_t priority = 1;
    std::optional<ScheduleTick> tick;  // the schedule's tick that fired it, journaled with it
    nlohmann::json data = nullptr;     // a run over data rows: Run::data
  };
  // Creates the run, and answers the request once the run is journaled. A schedule's run is
  // placed only once the journal holds it with its tick.
  Run& submit(Submission sub);
  // Why a scenario's callback steps cannot run here, if they cannot.
  std::optional<std::string> callback_problem(const scenario::Scenario& s) const;
  // Asks every worker to stop the run's instances (a cancel, a run ended on another host).
  void stop_on_workers(const std::string& run_id);

  // The routes, and their table (api_runs.cc).
  static const std::vector<ApiRoute>& routes();
  void api_submit(const ApiCall& c);
  void api_list(const ApiCall& c);
  void api_prune(const ApiCall& c);
  void api_get(const ApiCall& c);
  void api_cancel(const ApiCall& c);
  void api_resume(const ApiCall& c);
  void api_instances(const ApiCall& c);
  void api_instance(const ApiCall& c);
  void api_callback(const ApiCall& c);
  void api_callback_heartbeat(const ApiCall& c);

 private:
  Run* run_of(const ApiCall& c);
  api::SubmitAnswer answer_of(const Run& run) const;
  void release_when_journaled(const std::string& run_id);
  // GET /runs/<id>/instances (api_run_instances.cc).
  struct InstanceQuery {
    std::optional<InstanceState> state;  // only these
    uint32_t limit = 100;
    uint32_t from = 0;  // the first index to look at
    bool with_steps = false;
  };
  static Result<InstanceQuery> instance_query(const http::Request& req);
  // Appends to `list` the instances of `window` (instance k is the run's offset+k) from q.from on
  // that pass q's filter, until q.limit; returns the run's index after the last one looked at.
  uint32_t collect_instances(const Run& window, uint32_t offset, const InstanceQuery& q,
                             std::vector<api::InstanceEntry>& list) const;
  // Reads a run held as a summary back from the journal a page at a time until `list` is full
  // or the run ends, then answers.
  void read_instances(const std::string& id, uint32_t size, InstanceQuery q,
                      std::vector<api::InstanceEntry> list, const http::Responder& respond);
  // GET /runs/<id>/instances/<n>: instance n's record (with its data row, for a run over one).
  void answer_instance(const http::Responder& respond, Run& run, uint32_t i);
  // Runs over data rows (api_run_data.cc): the file is scanned off the loop, then submitted.
  void submit_data(const ApiCall& c, nlohmann::json body);
  std::optional<std::string> data_run_problem(const Result<data::Scan>& scan) const;
  void submit_data_run(nlohmann::json body, const data::Scan& scan, const std::string& path,
                       std::string_view format, const std::string& key, const std::string& index,
                       const http::Responder& respond);
  // For a run over data rows with a key column: the instance whose row has key <n>, found by
  // reading the file off the loop.
  void find_instance_by_key(const ApiCall& c, const Run& run);
  // Instance i's `entry` with its row and key from the run's data file (or the row's error),
  // when the run has one.
  void add_row(const Run& run, uint32_t i, api::InstanceEntry& entry) const;
  // The instance and step a callback token is for, when it may still be called (else it
  // answers the call).
  std::optional<callback::Address> callback_target(const ApiCall& c);

  uv_loop_t* loop_;
  const config::Config& cfg_;
  const Secrets& secrets_;
  Runs& runs_;
  Dispatcher& dispatcher_;
  WorkerLink& workers_;
  journal::Journal* journal_ = nullptr;
  cluster::Hosts* hosts_ = nullptr;
  std::string callback_key_;  // makes and checks callback tokens (shared/callback/token.h)
};

}  // namespace corral::master
