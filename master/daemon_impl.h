// The master's process: one libuv loop, the supervisor and the worker processes it carries
// out actions on, their frames and exits, the spare, reloads, systemd and the metrics snapshot;
// and the parts it owns and wires together (docs/architecture.md): RunService, ScheduleService,
// LoadService, LimitService, ClusterMember, HookService, WorkerFrames; those that serve the API
// reach the workers through the WorkerLink it implements. daemon.cc runs the lifecycle;
// daemon_workers.cc the workers and their exits (what a current worker says goes to WorkerFrames,
// worker_frames.h); api.cc the routes about them. Loop thread only.
#pragma once

#include <unistd.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "master/api_route.h"
#include "master/cluster_member.h"
#include "master/dispatcher.h"
#include "master/hook_service.h"
#include "master/journal/journal.h"
#include "master/limit_service.h"
#include "master/live_metrics.h"
#include "master/load_service.h"
#include "master/pid_file.h"
#include "master/run_service.h"
#include "master/runs.h"
#include "master/schedule_service.h"
#include "master/supervisor.h"
#include "master/worker_frames.h"
#include "master/worker_image.h"
#include "master/worker_link.h"
#include "master/worker_process.h"
#include "shared/callback/token.h"
#include "shared/cpu_meter.h"
#include "shared/data/rows.h"
#include "shared/http/server.h"
#include "shared/ipc/control.h"
#include "shared/ipc/http_errors.h"
#include "shared/secrets.h"
#include "shared/uv/next_turn.h"
#include "shared/uv/signal.h"
#include "shared/uv/timer.h"

namespace corral::master {

class Daemon : private WorkerLink, private WorkerFrames::Host {
 public:
  Daemon(uv_loop_t* loop, config::Config cfg, std::string config_file);
  ~Daemon();

  // Binds the API, spawns workers. Fails with a message for the user (port in use, ...).
  Status start();
  // Graceful stop: stop taking work, ask workers to stop, SIGKILL after the grace period,
  // then close every handle so the loop ends. A second call escalates to SIGKILL at once.
  void shutdown(const std::string& why);
  // A reload (SIGHUP, POST /workers/reload): takes the config file and the executable on disk
  // as a new image and has the supervisor replace the workers with it one at a time (see
  // supervisor.h). The master takes the new config once every worker was replaced. Fails,
  // changing nothing, when the config is invalid, the executable cannot be opened, or a reload
  // already runs. `origin` is for the log.
  Status begin_reload(const std::string& origin);
  // The reload in progress or the last one, for the API.
  nlohmann::json reload_json() const;
  // Closes every handle at once (after all workers are gone, or when start() failed).
  void finish();

  // --- for the control API ---
  Supervisor& supervisor() { return supervisor_; }
  const config::Config& config() const { return cfg_; }
  std::string listen_address() const;
  double uptime_s() const;
  void kick() override;  // run reconcile soon (after a fact or request was recorded)
  api::WorkerEntry worker_entry(const Slot& s) const;
  // The routes this part answers (api.cc, api_logs.cc, api_dashboard.cc), and their table
  // (api_routes.cc).
  static const std::vector<ApiRoute>& routes();

 private:
  void on_tick();
  void reconcile();
  void execute(const Action& a);
  // Starts the slot's process (the spare when it fits), or with `successor` its reload's new
  // worker.
  void spawn(int slot, bool successor);
  WorkerProcess::Callbacks callbacks_for(int slot, uint64_t generation);
  // Hands the spare to `slot` when it was started from `image`; false when there is none.
  bool give_spare(int slot, const WorkerImage& image);
  // The image a slot's process (re)starts from.
  const WorkerImage& image_of(int slot) const;
  // Whether `generation` is the slot's successor that still has a process.
  bool is_successor(int slot, uint64_t generation) const;
  void on_successor_frame(int slot, ipc::Frame&& f);
  // The spare worker (daemon_spare.cc): started in advance from image_ once every slot is
  // ready, taken by the next slot that needs a process of that image.
  void maybe_start_spare(uint64_t now_ms);
  std::unique_ptr<WorkerProcess> take_spare(const WorkerImage& image);
  void drop_spare(const std::string& why);
  void on_spare_frame(uint64_t seq, ipc::Frame&& f);
  void on_spare_exit(uint64_t seq, int64_t code, int signum);
  void on_successor_exit(int slot, int64_t code, int signum);
  // After a reconcile: a finished reload hands the master its config, a failed one is dropped.
  void settle_reload();
  // The master's own settings from cfg_: the supervisor's, retention, the worker count, hooks.
  void apply_master_config();
  // Workers, instances and reload in one line: systemd's STATUS=.
  std::string status_line() const;
  // From the tick: systemd's READY=1, STATUS= and WATCHDOG=1 (daemon_systemd.cc).
  void notify_systemd(uint64_t now_ms);
  // A frame of `slot`'s process of `generation`: a reload's successor's goes to
  // on_successor_frame, the current worker's to WorkerFrames.
  void on_frame(int slot, uint64_t generation, ipc::Frame&& f);
  void quarantine_runs(const std::vector<std::string>& runs, const std::string& why);
  void on_worker_exit(int slot, uint64_t generation, int64_t code, int signum);
  // Whether events from the process of `slot`'s `generation` still concern the slot: it is the
  // slot's latest process and has not exited.
  bool is_current(int slot, uint64_t generation) const;
  void sample_memory();
  // Each worker's CPU use since the last sample, from /proc/<pid>/stat: one small read a worker.
  void sample_cpu();
  ipc::Welcome welcome(int slot, const WorkerImage& image) const;
  ipc::Welcome welcome_for(int slot) const override;  // WorkerFrames::Host
  void handle_api(http::Request&& req, http::Responder respond);
  bool authorized(const http::Request& req) const;
  // The routes' handlers (the table is routes(), above).
  void api_health(const ApiCall& c);
  void api_latency(const ApiCall& c);
  void api_metrics(const ApiCall& c);
  void api_config(const ApiCall& c);
  void api_workers(const ApiCall& c);
  void api_scale(const ApiCall& c);
  void api_restart(const ApiCall& c);
  void api_reload_start(const ApiCall& c);
  void api_reload_get(const ApiCall& c);
  void api_shutdown(const ApiCall& c);
  void api_logs(const ApiCall& c);
  void api_dashboard_page(const ApiCall& c);
  void api_dashboard_file(const ApiCall& c);
  // The URL callback steps' tokens go under for workers started from `cfg` (their welcome).
  std::string callback_base(const config::Config& cfg) const;
  // Places the queue in a later turn, a slice per turn (WorkerLink, WorkerFrames::Host).
  void place_soon() override;
  Status open_journal();
  std::string journal_path() const;
  std::string journal_label() const;
  nlohmann::json journal_json() const;
  std::string metrics_text() const;
  // WorkerLink, for the parts (worker_link.h).
  bool send_to(int slot, ipc::MessageType type, const ipc::Payload& payload) override;
  void send_to_all(ipc::MessageType type, const nlohmann::json& payload) override;
  bool stopping() const override { return supervisor_.shutting_down(); }
  std::string callback_base() const override { return callback_base(image_->config()); }
  std::vector<int> ready_workers() const override;
  int wanted() const override { return supervisor_.wanted(); }
  void set_wanted(int n) override;
  static SupervisorSettings settings_from(const config::Config& cfg);
  static uint64_t memory_budget(const config::Config& cfg);
  static RunsOptions runs_options(const config::Config& cfg);

  uv_loop_t* loop_;
  config::Config cfg_;
  std::string config_file_;
  Secrets secrets_;  // workers expand them; the master only knows which names exist
  std::string executable_;
  std::shared_ptr<const WorkerImage> image_;                       // new slots start from it
  std::map<int, std::shared_ptr<const WorkerImage>> slot_images_;  // when not image_
  std::shared_ptr<const WorkerImage> candidate_;                   // while a reload runs
  std::vector<std::string> reload_notes_;  // config changes the reload cannot apply
  uint64_t settled_reload_ = 0;
  bool notify_enabled_ = false;  // under systemd ($NOTIFY_SOCKET): STATUS= lines are wanted
  bool ready_notified_ = false;  // systemd was told READY=1 once
  std::string last_status_;
  uint64_t last_status_ms_ = 0;
  uint64_t watchdog_ms_ = 0;  // systemd's WatchdogSec, 0: none
  uint64_t last_watchdog_ms_ = 0;
  std::mt19937_64 rng_;
  Supervisor supervisor_;
  LiveMetrics live_metrics_;
  HookService hooks_;                          // hook events
  std::unique_ptr<journal::Journal> journal_;  // before runs_: it outlives the table
  Runs runs_;
  Dispatcher dispatcher_;
  RunService run_service_;            // runs and callbacks as the API sees them
  ScheduleService schedule_service_;  // the schedules, their timer and routes
  LoadService load_service_;          // load tests, their watches and shares
  LimitService limits_;               // per-target limits and their shares
  ClusterMember cluster_;             // this host among those of a PostgreSQL journal
  WorkerFrames frames_;               // what the current workers tell the master
  ApiParts api_parts_;                // the parts that answer routes (api_routes.cc)
  std::unique_ptr<uv::NextTurn> pump_;
  std::map<int, std::unique_ptr<WorkerProcess>> workers_;      // by slot
  std::map<int, std::unique_ptr<WorkerProcess>> successors_;   // by slot, during a reload
  std::map<uint64_t, std::unique_ptr<WorkerProcess>> spares_;  // by number, until they exit
  uint64_t spare_ = 0;  // the number of the spare that can be taken; 0: none
  uint64_t spare_count_ = 0;
  bool spare_said_hello_ = false;
  std::shared_ptr<const WorkerImage> spare_image_;
  uint64_t spare_due_ms_ = 0;  // no new spare before this
  int spare_failures_ = 0;     // spares that exited on their own, in a row
  std::unique_ptr<http::Server> api_;
  std::unique_ptr<uv::Timer> tick_;
  std::unique_ptr<uv::Timer> kick_;
  std::unique_ptr<uv::Timer> restart_due_;  // a slot's backoff ends: reconcile then
  std::vector<std::unique_ptr<uv::Signal>> signals_;
  uint64_t started_ms_ = 0;
  uint64_t shutdown_started_ms_ = 0;  // monotonic; 0 until the first shutdown request
  uint64_t last_reconcile_ms_ = 0;
  uint64_t last_memory_sample_ms_ = 0;
  uint64_t last_cpu_sample_ms_ = 0;
  CpuMeter cpu_meter_{::sysconf(_SC_CLK_TCK)};
  struct CpuUse {
    pid_t pid = 0;
    double percent = 0;  // of one CPU, over the second before the last sample
  };
  std::map<int, CpuUse> cpu_use_;  // by slot
  uint64_t last_prune_ms_ = 0;
  uint64_t last_limits_ms_ = 0;
  bool kick_pending_ = false;
  bool finished_ = false;
  int shutdown_requests_ = 0;
};

}  // namespace corral::master
