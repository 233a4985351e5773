#include "master/daemon.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "config/secrets.h"
#include "master/daemon_impl.h"
#include "master/heap.h"
#include "master/systemd.h"
#include "shared/exit_codes.h"
#include "shared/log.h"
#include "shared/proc.h"
#include "shared/test_hooks.h"
#include "shared/uv/next_turn.h"

namespace corral::master {
namespace {

constexpr uint64_t kTickMs = 100;
// A heap trim this long held the loop past a probe's budget: it is logged for the operator.
constexpr uint64_t kSlowTrimUs = 5000;
constexpr uint64_t kHeldMs = 1000;  // a reconcile this late: the loop was held
constexpr uint64_t kMemorySampleMs = 250;
constexpr uint64_t kCpuSampleMs = 1000;    // the CPU use shown in GET /workers is over this long
constexpr uint64_t kLimitsEveryMs = 1000;  // the limits of runs that finished go this often
constexpr uint64_t kPruneEveryMs = 60000;  // retention is applied at least this often

}  // namespace

SupervisorSettings Daemon::settings_from(const config::Config& cfg) {
  SupervisorSettings s;
  s.restart.backoff_initial_ms = cfg.backoff_initial_ms;
  s.restart.backoff_factor = cfg.backoff_factor;
  s.restart.backoff_max_ms = cfg.backoff_max_ms;
  s.restart.stable_after_ms = cfg.stable_after_ms;
  s.restart.crash_loop_exits = cfg.crash_loop_exits;
  s.restart.errored_retry_ms = cfg.errored_retry_ms;
  s.ready_timeout_ms = cfg.ready_timeout_ms;
  s.reload_grace_ms = cfg.reload_grace_ms;
  s.heartbeat_timeout_ms = cfg.heartbeat_timeout_ms;
  s.kill_grace_ms = cfg.kill_grace_ms;
  s.stop_grace_ms = cfg.stop_grace_ms;
  s.memory_hard_bytes =
      static_cast<uint64_t>(static_cast<double>(cfg.max_memory_bytes) * cfg.memory_hard_factor);
  return s;
}

Daemon::Daemon(uv_loop_t* loop, config::Config cfg, std::string config_file)
    : loop_(loop),
      cfg_(std::move(cfg)),
      config_file_(std::move(config_file)),
      executable_(own_executable()),
      rng_(std::random_device{}()),
      supervisor_(settings_from(cfg_), cfg_.workers > 0 ? cfg_.workers : config::usable_cpus(),
                  [this] { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }),
      hooks_(loop, live_metrics_),
      runs_(runs_options(cfg_)),
      dispatcher_(
          runs_,
          [this](int slot, ipc::MessageType t, const ipc::Payload& p) {
            return send_to(slot, t, p);
          },
          static_cast<uint32_t>(cfg_.worker_instances)),
      run_service_(loop, cfg_, secrets_, runs_, dispatcher_, *this),
      schedule_service_(loop, run_service_, *this),
      load_service_(loop, cfg_, secrets_, *this),
      limits_(cfg_, runs_, *this),
      cluster_(loop, runs_, dispatcher_, run_service_, load_service_, *this),
      frames_(*this, {supervisor_, dispatcher_, runs_, limits_, load_service_, live_metrics_}),
      api_parts_{this, &run_service_, &schedule_service_, &load_service_, &cluster_} {
  dispatcher_.memory().set_budget(memory_budget(cfg_));
  runs_.set_on_finished(
      [this](const Run& run) { hooks_.run_finished(run, runs_.detail_json(run)); });
  dispatcher_.set_before_define([this](const Run& run) { limits_.before_define(run); });
  dispatcher_.set_holds([this](int slot) { return supervisor_.reload_holds(slot); });
}

Daemon::~Daemon() = default;

RunsOptions Daemon::runs_options(const config::Config& cfg) {
  RunsOptions o;
  o.max_resumes = static_cast<uint32_t>(cfg.max_resumes);
  o.quarantine_after = static_cast<uint32_t>(cfg.quarantine_after);
  o.quarantine_window_ms = static_cast<int64_t>(cfg.quarantine_window_ms);
  o.keep_runs = static_cast<size_t>(cfg.keep_runs);
  o.keep_for_ms = static_cast<int64_t>(cfg.keep_runs_for_ms);
  return o;
}

std::string Daemon::journal_path() const {
  return cfg_.journal.empty() ? cfg_.home + "/journal.db" : cfg_.journal;
}

std::string Daemon::journal_label() const { return journal::redact_journal(journal_path()); }

Status Daemon::open_journal() {
  // CORRAL_TEST_JOURNAL_MAX_PAGES caps the journal's size, so that tests can fill it up.
  const char* pages = test_hook("CORRAL_TEST_JOURNAL_MAX_PAGES");
  auto store = journal::open_journal_store(journal_path(), pages ? std::atoll(pages) : 0);
  if (!store) return store.status();
  journal_ = std::make_unique<journal::Journal>(loop_, std::move(*store));
  journal_->set_on_rejected([this](const journal::WriteTag& tag, const std::string& error) {
    runs_.on_journal_rejected(tag, error);
  });
  runs_.attach(journal_.get());
  runs_.set_clustered(journal::is_postgresql(journal_path()));  // docs/cluster.md
  // Read before the runs' restore, which starts writing (and from then on the store belongs to
  // the journal's thread).
  auto schedule_rows = journal_->load_now([](journal::Store& s) { return s.schedules(); });
  if (!schedule_rows) return schedule_rows.status();
  auto load_seq =
      journal_->load_now([](journal::Store& s) { return s.next_seq(journal::Store::kLoadSeq); });
  if (!load_seq) return load_seq.status();
  load_service_.table().number_from(*load_seq, [this](uint64_t next) {
    journal_->write([next](journal::Store& s) { return s.bump_seq(journal::Store::kLoadSeq, next); });
  });
  const bool shared = journal::is_postgresql(journal_path());
  if (Status s = load_service_.attach(journal_.get(), shared ? host_id(cfg_.home) : ""); !s)
    return s;
  const int64_t now = unix_ms_now();
  auto resumed = runs_.restore(now);
  if (!resumed) return resumed.status();
  schedule_service_.restore(journal_.get(), *schedule_rows, now);
  spdlog::info("journal {}: {} runs, {} instances resume, {} schedules, {} load tests",
               journal_label(), runs_.all().size(), *resumed,
               schedule_service_.table().all().size(), load_service_.kept().size());
  return Status::ok();
}

namespace {

// The control API on the Unix socket, and on TCP unless `listen` is "off".
Result<std::unique_ptr<http::Server>> open_api(uv_loop_t* loop, const config::Config& cfg,
                                               http::Handler handler) {
  auto api = std::make_unique<http::Server>(loop, std::move(handler));
  if (Status s = api->listen_unix(cfg.home + "/corral.sock", 0600); !s) return s;
  if (cfg.listen == "off") return api;
  auto hp = config::parse_host_port(cfg.listen);
  if (!hp) return hp.status();
  if (Status s = api->listen_tcp(hp->first, hp->second); !s) {
    return Status(s.code(), "cannot listen on " + cfg.listen + ": " + s.message());
  }
  return api;
}

// SIGTERM, SIGINT and SIGHUP, each handed to `on_signal`.
Result<std::vector<std::unique_ptr<uv::Signal>>> catch_signals(uv_loop_t* loop,
                                                               std::function<void(int)> on_signal) {
  std::vector<std::unique_ptr<uv::Signal>> signals;
  for (int signum : {SIGTERM, SIGINT, SIGHUP}) {
    auto sig = std::make_unique<uv::Signal>(loop);
    if (Status s = sig->start(signum, on_signal); !s) return s;
    signals.push_back(std::move(sig));
  }
  return signals;
}

}  // namespace

Status Daemon::start() {
  started_ms_ = monotonic_ms();
  try {
    secrets_ = config::load_secrets(cfg_.secrets_file);
  } catch (const config::ConfigError& e) {
    return invalid_argument(e.what());
  }
  auto image = WorkerImage::open(executable_, cfg_, secrets_, 0);
  if (!image) return image.status();
  image_ = std::move(*image);
  hooks_.start(cfg_.hooks);
  auto key = callback::load_or_make_key(cfg_.home + "/callback.key");
  if (!key) return key.status();
  if (Status s = open_journal(); !s) return s;
  run_service_.attach(journal_.get(), std::move(*key));
  auto api = open_api(loop_, cfg_, [this](http::Request&& req, http::Responder r) {
    handle_api(std::move(req), r);
  });
  if (!api) return api.status();
  api_ = std::move(*api);
  // Once listening: its row gives the API's address.
  cluster_.start(journal_.get(), journal_path(), journal_label(), cfg_.home,
                 [this] { return listen_address(); });
  auto signals = catch_signals(loop_, [this](int n) {
    if (n == SIGHUP) {
      if (Status r = begin_reload("SIGHUP"); !r) spdlog::error("SIGHUP: {}", r.message());
    } else {
      shutdown(signal_name(n));
    }
  });
  if (!signals) return signals.status();
  signals_ = std::move(*signals);
  notify_enabled_ = systemd::notify_enabled();
  watchdog_ms_ = systemd::watchdog_interval_ms();
  if (watchdog_ms_ != 0) spdlog::info("systemd watchdog: WATCHDOG=1 every {} ms", watchdog_ms_ / 2);
  tick_ = std::make_unique<uv::Timer>(loop_);
  tick_->start(kTickMs, kTickMs, [this] { on_tick(); });
  kick_ = std::make_unique<uv::Timer>(loop_);
  restart_due_ = std::make_unique<uv::Timer>(loop_);
  pump_ = std::make_unique<uv::NextTurn>(loop_);
  schedule_service_.start();
  for (const char* name : {"CORRAL_TEST_FAULT", "CORRAL_TEST_POISON_INSTANCE",
                           "CORRAL_TEST_JOURNAL_MAX_PAGES", "CORRAL_TEST_CLOCK_STEP"}) {
    if (const char* v = test_hook(name)) {
      spdlog::warn("{}={} is set: this daemon misbehaves on purpose, for tests", name, v);
    }
  }
  spdlog::info("corral daemon {} started: pid {}, home {}, api {}, {} workers, max_memory {}",
               CORRAL_VERSION, getpid(), cfg_.home, listen_address(), supervisor_.wanted(),
               cfg_.max_memory_bytes ? config::format_bytes(cfg_.max_memory_bytes) : "none");
  reconcile();
  return Status::ok();
}

std::string Daemon::listen_address() const {
  if (cfg_.listen == "off" || !api_) return "off";
  auto hp = config::parse_host_port(cfg_.listen);
  if (!hp) return cfg_.listen;
  return hp->first + ":" + std::to_string(api_->tcp_port());
}

double Daemon::uptime_s() const {
  return static_cast<double>(monotonic_ms() - started_ms_) / 1000.0;
}

void Daemon::set_wanted(int n) {
  supervisor_.set_wanted(n);
  kick();
}

void Daemon::kick() {
  if (kick_pending_ || !kick_) return;
  kick_pending_ = true;
  kick_->start(0, 0, [this] {
    kick_pending_ = false;
    reconcile();
  });
}

void Daemon::place_soon() {
  if (!pump_ || pump_->scheduled()) return;
  // One slice per turn of the loop, so that I/O and the API are served between slices.
  pump_->schedule([this] {
    // A dead worker's instances go back to the queue first, then the queue is placed.
    const uv::Slice slice = uv::Slice::of_turn(loop_);
    const bool requeuing = runs_.requeue_work(slice);
    if (dispatcher_.pump(SIZE_MAX, &slice) || requeuing) place_soon();
  });
}

void Daemon::on_tick() {
  uint64_t now = monotonic_ms();
  if (now - last_memory_sample_ms_ >= kMemorySampleMs) {
    last_memory_sample_ms_ = now;
    sample_memory();
  }
  if (now - last_cpu_sample_ms_ >= kCpuSampleMs) {
    last_cpu_sample_ms_ = now;
    sample_cpu();
  }
  if (bool due = runs_.prune_due(); due || now - last_prune_ms_ >= kPruneEveryMs) {
    last_prune_ms_ = now;
    size_t n = runs_.prune(unix_ms_now());
    if (n > 0) spdlog::info("retention: {} finished runs pruned", n);
    // A run ended (its instances may now be a summary) or runs were forgotten: their memory
    // was freed in bulk.
    if (due || n > 0) {
      const uint64_t us = release_free_heap();
      spdlog::log(us >= kSlowTrimUs ? spdlog::level::info : spdlog::level::debug,
                  "heap trimmed in {} us", us);
    }
  }
  reconcile();
  if (journal_) hooks_.watch_journal(*journal_, journal_label());
  if (now - last_limits_ms_ >= kLimitsEveryMs) {
    last_limits_ms_ = now;
    limits_.refresh();
  }
  // A reload moves instances itself, to the new workers only (Supervisor::reload_holds).
  if (!supervisor_.shutting_down() && supervisor_.reload().phase != ReloadStatus::Phase::kRunning) {
    dispatcher_.rebalance(now);
  }
  load_service_.on_tick();
  maybe_start_spare(now);
  notify_systemd(now);
}

void Daemon::sample_memory() {
  for (const auto& [slot, w] : workers_) {
    if (!w->exited()) supervisor_.on_rss_sample(slot, rss_bytes(w->pid()));
  }
}

void Daemon::sample_cpu() {
  const auto now = CpuMeter::Clock::now();
  std::set<long> pids;
  cpu_use_.clear();
  for (const auto& [slot, w] : workers_) {
    if (w->exited()) continue;
    const std::optional<ProcStat> stat = proc_stat(w->pid());
    auto percent = cpu_meter_.update(w->pid(), stat ? std::optional(stat->cpu_ticks) : std::nullopt,
                                     now);
    if (percent) cpu_use_[slot] = {w->pid(), *percent};
    pids.insert(w->pid());
  }
  cpu_meter_.keep_only(pids);
}

void Daemon::reconcile() {
  if (finished_) return;
  const uint64_t now = monotonic_ms();
  // The tick reconciles every kTickMs: a longer gap is time the loop itself was held (a stopped
  // process, a suspended machine), while the workers' frames waited for it.
  if (last_reconcile_ms_ != 0 && now - last_reconcile_ms_ > kTickMs + kHeldMs) {
    spdlog::warn("the master's loop was held for {} ms", now - last_reconcile_ms_ - kTickMs);
    supervisor_.on_master_held(now - last_reconcile_ms_ - kTickMs, now);
  }
  last_reconcile_ms_ = now;
  // A worker that seems silent may not be: with more busy processes than cores, its frames can
  // wait unread in its pipe (the master is behind, not the worker), or its loop runs, starved of
  // CPU, still making system calls. Only the silent ones are looked at.
  for (const auto& [slot, w] : workers_) {
    if (!supervisor_.watched(slot, now)) {
      w->stop_watching();
    } else if (w->has_unread()) {
      supervisor_.on_heard(slot, now);
    } else if (w->made_calls()) {
      supervisor_.on_progress(slot, now);
    }
  }
  for (const Action& a : supervisor_.reconcile(now)) execute(a);
  // A restart is due when its backoff ends, not at the tick after it.
  if (uint64_t due = supervisor_.next_start_due_ms(); due > now && restart_due_) {
    restart_due_->start(due - now, 0, [this] { kick(); });
  }
  hooks_.report_exits(supervisor_, monotonic_ms());
  settle_reload();
  if (supervisor_.finished()) finish();
}

void Daemon::execute(const Action& a) {
  switch (a.kind) {
    case Action::Kind::kSpawn:
      spawn(a.slot, a.successor);
      return;
    case Action::Kind::kAdopt:
      workers_[a.slot] = std::move(successors_[a.slot]);
      successors_.erase(a.slot);
      slot_images_[a.slot] = candidate_;
      frames_.forget(a.slot);
      spdlog::info("slot {}: new worker pid {} took over", a.slot, workers_[a.slot]->pid());
      dispatcher_.worker_ready(a.slot);
      limits_.worker_ready(a.slot);
      cluster_.worker_adopted(a.slot);
      place_soon();
      return;
    case Action::Kind::kSignal:
      if (a.successor) {
        if (auto it = successors_.find(a.slot); it != successors_.end()) {
          spdlog::warn("slot {}: sending {} to its new worker pid {}", a.slot,
                       signal_name(a.signum), it->second->pid());
          it->second->signal(a.signum);
        }
        return;
      }
      dispatcher_.worker_gone(a.slot);
      if (auto it = workers_.find(a.slot); it != workers_.end()) {
        spdlog::warn("slot {}: sending {} to pid {}", a.slot, signal_name(a.signum),
                     it->second->pid());
        it->second->signal(a.signum);
      }
      return;
    case Action::Kind::kSendStop:
      dispatcher_.worker_gone(a.slot);
      if (auto it = workers_.find(a.slot); it != workers_.end()) {
        Status s = it->second->send(ipc::MessageType::kStop, ipc::to_json(ipc::Stop{a.grace_ms}));
        // A worker that cannot be told is killed instead; it gets no grace.
        if (!s) it->second->signal(SIGKILL);
      }
      return;
  }
}

void Daemon::shutdown(const std::string& why) {
  shutdown_requests_ += 1;
  if (shutdown_requests_ == 1) {
    shutdown_started_ms_ = monotonic_ms();
    spdlog::info("shutting down ({}): stopping {} workers, grace {}", why,
                 supervisor_.slots().size(), config::format_duration_ms(cfg_.stop_grace_ms));
    load_service_.stop_all("the daemon is stopping");
    supervisor_.begin_shutdown();
    drop_spare("the daemon is stopping");
    systemd::notify("STOPPING=1\nSTATUS=stopping (" + why + ")");
  } else {
    spdlog::warn("second shutdown request ({}): killing workers now", why);
    for (auto& [slot, w] : workers_) w->signal(SIGKILL);
    for (auto& [slot, w] : successors_) w->signal(SIGKILL);
  }
  kick();
}

void Daemon::finish() {
  if (finished_) return;
  finished_ = true;
  spdlog::info("all workers stopped; daemon exits");
  workers_.clear();
  successors_.clear();
  spares_.clear();
  load_service_.keep_all("the daemon stopped");
  if (api_) api_->close();
  tick_.reset();
  kick_.reset();
  restart_due_.reset();
  schedule_service_.stop();
  pump_.reset();
  signals_.clear();
  const uint64_t spent = shutdown_started_ms_ != 0 ? monotonic_ms() - shutdown_started_ms_ : 0;
  hooks_.stop(cfg_.stop_grace_ms > spent ? cfg_.stop_grace_ms - spent : 0);
  cluster_.leave();
}

int run_daemon(const config::Config& cfg, const std::string& config_file) {
  std::signal(SIGPIPE, SIG_IGN);  // a write to a just-killed worker must not kill the master
  tune_heap();
  if (Status s = make_dirs(cfg.home); !s) {
    std::fprintf(stderr, "corral: cannot use home %s: %s\n", cfg.home.c_str(), s.message().c_str());
    return 1;
  }
  auto pid_file = PidFile::acquire(cfg.home + "/corral.pid");
  if (!pid_file) {
    std::fprintf(stderr, "corral: %s\n", pid_file.status().message().c_str());
    return 1;
  }
  LogOptions log{cfg.home + "/logs", "master",      cfg.log_max_bytes,
                 cfg.log_files,      cfg.log_level, isatty(2) != 0};
  if (Status s = open_log(log); !s) {
    std::fprintf(stderr, "corral: %s\n", s.message().c_str());
    return 1;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  int rc = 0;
  {
    uv::TurnMarker turns(&loop);  // work in slices shares one per poll (uv::Slice::of_turn)
    Daemon daemon(&loop, cfg, config_file);
    if (Status s = daemon.start(); !s) {
      spdlog::error("start-up failed: {}", s.message());
      std::fprintf(stderr, "corral: %s\n", s.message().c_str());
      daemon.finish();
      rc = 1;
    }
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // let close callbacks free every handle
  if (uv_loop_close(&loop) != 0) spdlog::warn("loop closed with handles still open");
  spdlog::default_logger()->flush();
  return rc;
}

int run_daemon(const config::Config& cfg) { return run_daemon(cfg, ""); }

}  // namespace corral::master
