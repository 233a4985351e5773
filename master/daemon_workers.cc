// The master's side of its workers: starting them, their IPC frames, their exits, and what
// happens to the instances they held.
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <csignal>

#include "master/daemon_impl.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

// The host's name, for a listener on every address (0.0.0.0, ::).
std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// A death that may be the fault of what the worker ran: a hang, a crash of its own, a memory
// limit. A kill from outside, a stop or a protocol error is not; those count against no run.
bool may_be_the_runs(const ExitInfo& e);

// A crash of the worker's own making (not a kill from outside, a limit or a stop): when no
// instance was in hand, every instance it ran shares the blame.
bool crashed_on_its_own(const ExitInfo& e) {
  if (e.reason == ExitReason::kCrash) return true;
  if (e.reason != ExitReason::kSignal) return false;
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) {
    if (e.signal == sig) return true;
  }
  return false;
}

bool may_be_the_runs(const ExitInfo& e) {
  switch (e.reason) {
    case ExitReason::kHung:
    case ExitReason::kCrash:
    case ExitReason::kMemoryHard:
    case ExitReason::kOomKernel:
      return true;
    case ExitReason::kSignal:
      return crashed_on_its_own(e);
    default:
      return false;
  }
}

}  // namespace

bool Daemon::send_to(int slot, ipc::MessageType type, const ipc::Payload& payload) {
  auto it = workers_.find(slot);
  if (it == workers_.end()) return false;
  Status s = it->second->send(type, payload);
  if (!s)
    spdlog::warn("slot {}: cannot send {}: {}", slot, ipc::message_info(type).name, s.message());
  return s.is_ok();
}

void Daemon::send_to_all(ipc::MessageType type, const nlohmann::json& payload) {
  for (const auto& [slot, w] : workers_) (void)send_to(slot, type, ipc::Payload(payload));
}

std::string Daemon::callback_base(const config::Config& cfg) const {
  if (!cfg.callback_base.empty()) return cfg.callback_base;
  if (cfg_.listen == "off" || !api_) return "";
  auto hp = config::parse_host_port(cfg_.listen);
  if (!hp) return "";
  std::string host = hp->first;
  if (host == "0.0.0.0" || host == "::") host = host_name();
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(api_->tcp_port());
}

std::vector<int> Daemon::ready_workers() const {
  std::vector<int> ready;
  for (const Slot& s : supervisor_.slots()) {
    if (s.state == SlotState::kReady && workers_.count(s.index) != 0) ready.push_back(s.index);
  }
  return ready;
}

const WorkerImage& Daemon::image_of(int slot) const {
  auto it = slot_images_.find(slot);
  return it != slot_images_.end() && it->second ? *it->second : *image_;
}

WorkerProcess::Callbacks Daemon::callbacks_for(int slot, uint64_t generation) {
  WorkerProcess::Callbacks cb;
  cb.on_frame = [this, slot, generation](ipc::Frame&& f) {
    on_frame(slot, generation, std::move(f));
  };
  cb.on_protocol_error = [this, slot, generation](const Status& st) {
    if (is_successor(slot, generation)) {
      supervisor_.on_successor_failed(slot, "broke the protocol: " + st.message(), false,
                                      monotonic_ms());
    } else if (is_current(slot, generation)) {
      spdlog::error("slot {}: protocol error from worker: {}", slot, st.message());
      supervisor_.on_protocol_error(slot, st.message());
    }
    kick();
  };
  cb.on_exit = [this, slot, generation](int64_t code, int signum) {
    if (is_successor(slot, generation)) {
      on_successor_exit(slot, code, signum);
    } else {
      on_worker_exit(slot, generation, code, signum);
    }
  };
  return cb;
}

bool Daemon::give_spare(int slot, const WorkerImage& image) {
  const bool said_hello = spare_said_hello_;
  std::unique_ptr<WorkerProcess> taken = take_spare(image);
  if (!taken) return false;
  const Slot* s = supervisor_.slot(slot);
  taken->set_callbacks(callbacks_for(slot, s->generation));
  spdlog::info("slot {}: took the spare worker pid {} (start #{})", slot, taken->pid(), s->starts);
  supervisor_.on_spawned(slot, taken->pid(), monotonic_ms());
  WorkerProcess& w = *taken;
  workers_[slot] = std::move(taken);
  // One that has not said hello yet gets its welcome when it does (on_frame).
  if (said_hello) (void)w.send(ipc::MessageType::kWelcome, ipc::to_json(welcome(slot, image)));
  return true;
}

void Daemon::spawn(int slot, bool successor) {
  const Slot* s = supervisor_.slot(slot);
  const WorkerImage& image = successor ? *candidate_ : image_of(slot);
  if (!successor && give_spare(slot, image)) return;
  uint64_t generation = successor ? s->successor->generation : s->generation;
  SpawnSpec spec{image.path(),
                 image.exec_path(),
                 {"worker", "--slot", std::to_string(slot), "--home", cfg_.home}};
  auto w = WorkerProcess::spawn(loop_, spec, callbacks_for(slot, generation));
  if (!w) {
    spdlog::error("slot {}: {}", slot, w.status().message());
    if (successor) {
      supervisor_.on_successor_failed(slot, "could not be started: " + w.status().message(), true,
                                      monotonic_ms());
    } else {
      supervisor_.on_spawn_failed(slot, w.status().message(), monotonic_ms(), unix_ms_now());
      hooks_.worker_exited(supervisor_, slot, 0, s->restarts);
    }
    kick();
    return;
  }
  spdlog::info("slot {}: started {} pid {} (start #{}, image {})", slot,
               successor ? "new worker" : "worker", (*w)->pid(),
               successor ? s->starts + 1 : s->starts, image.number());
  if (successor) {
    supervisor_.on_successor_spawned(slot, (*w)->pid(), monotonic_ms());
    successors_[slot] = std::move(*w);
  } else {
    supervisor_.on_spawned(slot, (*w)->pid(), monotonic_ms());
    workers_[slot] = std::move(*w);
  }
}

bool Daemon::is_successor(int slot, uint64_t generation) const {
  const Slot* s = supervisor_.slot(slot);
  return s != nullptr && s->successor && s->successor->generation == generation &&
         successors_.count(slot) != 0;
}

bool Daemon::is_current(int slot, uint64_t generation) const {
  const Slot* s = supervisor_.slot(slot);
  return s != nullptr && s->generation == generation && workers_.count(slot) != 0;
}

void Daemon::on_worker_exit(int slot, uint64_t generation, int64_t code, int signum) {
  if (!is_current(slot, generation)) return;
  pid_t pid = workers_[slot]->pid();
  auto culprit = workers_[slot]->culprit();
  // A culprit blamed before is a poisonous instance, which max_resumes deals with alone: its
  // deaths must not quarantine the run it is part of.
  const bool repeat_culprit = culprit && runs_.crash_resumes(*culprit) > 0;
  const int restarts = supervisor_.slot(slot)->restarts;
  supervisor_.on_exit(slot, code, signum, /*kernel_oom_kill=*/false, monotonic_ms(), unix_ms_now());
  const Slot* s = supervisor_.slot(slot);
  hooks_.worker_exited(supervisor_, slot, pid, restarts);
  live_metrics_.worker_exited(to_string(s->last_exit->reason));
  frames_.worker_gone(slot);
  spdlog::log(
      s->last_exit->reason == ExitReason::kStopped ? spdlog::level::info : spdlog::level::warn,
      "slot {}: worker pid {} exited: {}", slot, pid, describe(*s->last_exit));
  workers_.erase(slot);  // destroys the WorkerProcess from inside its own exit callback: allowed
  dispatcher_.worker_gone(slot);
  limits_.worker_gone(slot);
  load_service_.worker_gone(slot);
  std::string why = "worker_" + std::string(to_string(s->last_exit->reason));
  if (culprit) {
    spdlog::warn("slot {}: the worker died while running code for run {} instance {}", slot,
                 culprit->first, culprit->second);
  }
  const bool quarantine = may_be_the_runs(*s->last_exit) && !repeat_culprit;
  runs_.requeue_worker(
      {slot, why, culprit, crashed_on_its_own(*s->last_exit),
       [this, why, slot, quarantine](size_t n, const std::vector<std::string>& had) {
         if (n > 0) {
           spdlog::warn("slot {}: {} instances went back to the queue to resume ({})", slot, n,
                        why);
         }
         if (quarantine) quarantine_runs(had, why);
       }});
  place_soon();  // which does the requeue a slice at a time
  kick();
}

// A run whose workers keep dying is not placed again: it must never take every worker down in
// a loop (docs/guarantees.md).
void Daemon::quarantine_runs(const std::vector<std::string>& runs, const std::string& why) {
  const int64_t now = unix_ms_now();
  for (Run* run : runs_.worker_died(runs, why, now)) {
    spdlog::error("run {}: quarantined: {}", run->id, run->quarantine);
    hooks_.run_quarantined(runs_.detail_json(*run), now);
  }
}

ipc::Welcome Daemon::welcome(int slot, const WorkerImage& image) const {
  const config::Config& cfg = image.config();
  ipc::Welcome w;
  w.protocol = ipc::kProtocolVersion;
  w.slot = slot;
  w.heartbeat_ms = cfg.heartbeat_interval_ms;
  w.max_memory_bytes = cfg.max_memory_bytes;
  w.kernel_memory_bytes =
      static_cast<uint64_t>(static_cast<double>(cfg.max_memory_bytes) * cfg.memory_kernel_factor);
  w.log_max_bytes = cfg.log_max_bytes;
  w.log_files = cfg.log_files;
  w.log_level = cfg.log_level;
  w.max_response_bytes = cfg.max_response_bytes;
  w.response_memory_bytes = cfg.response_memory_bytes;
  w.http_client = cfg.http_client;
  w.http_version = cfg.http_version;
  w.tls = http::to_json(cfg.tls);
  w.max_connections_per_host = static_cast<int>(cfg.max_connections_per_host);
  w.secrets = {image.secrets().all().begin(), image.secrets().all().end()};
  w.callback_base = callback_base(cfg);
  w.callback_key = run_service_.callback_key();
  w.lease_until_ms = cluster_.lease_until_ms();
  return w;
}

ipc::Welcome Daemon::welcome_for(int slot) const { return welcome(slot, image_of(slot)); }

void Daemon::on_frame(int slot, uint64_t generation, ipc::Frame&& f) {
  if (is_successor(slot, generation)) {
    on_successor_frame(slot, std::move(f));
    return;
  }
  if (!is_current(slot, generation)) return;
  uint64_t now = monotonic_ms();
  supervisor_.on_heard(slot, now);
  frames_.on_frame(slot, *workers_[slot], std::move(f), now);
}

}  // namespace corral::master
