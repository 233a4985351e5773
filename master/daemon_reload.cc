// The master's side of a reload: the new image it starts from, the successors' frames and
// exits, and what the master takes over once the reload has ended.
#include <spdlog/spdlog.h>

#include "config/secrets.h"
#include "master/daemon_impl.h"
#include "master/systemd.h"
#include "shared/proc.h"

namespace corral::master {

Status Daemon::begin_reload(const std::string& origin) {
  if (std::string why = supervisor_.reload_refusal(); !why.empty()) {
    return Status(Code::kAlreadyExists, why);
  }
  config::Config next = cfg_;
  Secrets secrets = secrets_;
  if (!config_file_.empty()) {
    try {
      config::apply_file(next, config_file_);
      config::validate(next);
      secrets = config::load_secrets(next.secrets_file);
    } catch (const config::ConfigError& e) {
      return invalid_argument("config not reloaded: " + std::string(e.what()));
    }
  }
  // What only a new master can change; the rest applies.
  std::vector<std::string> notes;
  if (next.listen != cfg_.listen) {
    notes.push_back("listen changed to " + next.listen + ": it needs a master restart");
    next.listen = cfg_.listen;
  }
  if (next.journal != cfg_.journal) {
    notes.push_back("journal changed to " + next.journal + ": it needs a master restart");
    next.journal = cfg_.journal;
  }
  uint64_t number = supervisor_.reload().number + 1;
  auto image = WorkerImage::open(executable_, next, std::move(secrets), number);
  if (!image) return image.status();
  std::string why;
  if (!supervisor_.request_reload(monotonic_ms(), &why)) return Status(Code::kAlreadyExists, why);
  candidate_ = std::move(*image);
  reload_notes_ = std::move(notes);
  for (const auto& n : reload_notes_) spdlog::warn("reload {}: {}", number, n);
  systemd::notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic_ms() * 1000) +
                  "\nSTATUS=" + status_line());
  spdlog::info("reload {} ({}): replacing {} workers from {}{}", number, origin,
               supervisor_.reload().slots.size(), executable_,
               config_file_.empty() ? "" : " with " + config_file_);
  kick();
  return Status::ok();
}

void Daemon::apply_master_config() {
  supervisor_.update_settings(settings_from(cfg_));
  runs_.set_options(runs_options(cfg_));
  const int from_config = cfg_.workers > 0 ? cfg_.workers : config::usable_cpus();
  if (!supervisor_.set_config_wanted(from_config)) {
    spdlog::info("reload {}: keeping the {} workers set by corral scale (the config says {})",
                 supervisor_.reload().number, supervisor_.wanted(), cfg_.workers);
  }
  dispatcher_.memory().set_budget(memory_budget(cfg_));
  hooks_.set_hooks(cfg_.hooks);
  limits_.refresh();
}

// What a worker may fill, idle RSS included: 80 % of max_memory, leaving room under the soft
// limit for what comes and goes (responses, buffers); without max_memory, an equal share of
// 80 % of the machine's memory among the workers and the master.
uint64_t Daemon::memory_budget(const config::Config& cfg) {
  if (cfg.max_memory_bytes != 0) return cfg.max_memory_bytes / 10 * 8;
  uint64_t machine = uv_get_total_memory();
  if (uint64_t limit = uv_get_constrained_memory(); limit != 0) machine = std::min(machine, limit);
  const uint64_t workers = cfg.workers > 0 ? cfg.workers : config::usable_cpus();
  return machine / 10 * 8 / (workers + 1);
}

void Daemon::settle_reload() {
  const ReloadStatus& r = supervisor_.reload();
  if (r.number == settled_reload_ || r.phase == ReloadStatus::Phase::kRunning || !candidate_) {
    return;
  }
  settled_reload_ = r.number;
  if (r.phase == ReloadStatus::Phase::kDone) {
    cfg_ = candidate_->config();
    secrets_ = candidate_->secrets();
    image_ = candidate_;
    slot_images_.clear();  // every slot runs image_ now
    drop_spare("the reload changed the binary and config");
    apply_master_config();
    spdlog::info("reload {}: done; {} workers wanted", r.number, supervisor_.wanted());
    kick();
  } else {
    spdlog::error("reload {}: failed at slot {}: {}; {} slots run the new worker, the others "
                  "keep theirs and restart from their own binary and config",
                  r.number, r.slot, r.error, r.replaced.size());
  }
  candidate_.reset();  // the slots that took it still hold it
  place_soon();        // the instances the reload held in the queue go to the workers now
  if (!supervisor_.shutting_down()) {  // a stopping daemon said STOPPING=1 already
    last_status_ = status_line();
    systemd::notify("READY=1\nSTATUS=" + last_status_);
  }
}

nlohmann::json Daemon::reload_json() const {
  const ReloadStatus& r = supervisor_.reload();
  uint64_t end = r.phase == ReloadStatus::Phase::kRunning ? monotonic_ms() : r.ended_at_ms;
  return {{"number", r.number},
          {"state", to_string(r.phase)},
          {"slots", r.slots},
          {"replaced", r.replaced},
          {"slot", r.slot >= 0 ? nlohmann::json(r.slot) : nlohmann::json(nullptr)},
          {"error", r.error},
          {"notes", reload_notes_},
          {"grace_ms", cfg_.reload_grace_ms},
          {"elapsed_ms", r.number == 0 ? 0 : end - r.started_at_ms}};
}

void Daemon::on_successor_frame(int slot, ipc::Frame&& f) {
  WorkerProcess* w = successors_[slot].get();
  uint64_t now = monotonic_ms();
  supervisor_.on_heard(slot, now, true);
  const nlohmann::json& p = f.payload;
  switch (f.type) {
    case ipc::MessageType::kHello:
      if (Status st = ipc::check_hello(p); !st) {
        supervisor_.on_successor_failed(slot, st.message(), false, now);
        kick();
        return;
      }
      (void)w->send(ipc::MessageType::kWelcome, ipc::to_json(welcome(slot, *candidate_)));
      return;
    case ipc::MessageType::kReady:
      spdlog::info("slot {}: new worker pid {} ready; on probation for {}", slot, w->pid(),
                   config::format_duration_ms(cfg_.reload_grace_ms));
      supervisor_.on_successor_ready(slot, now);
      kick();
      return;
    case ipc::MessageType::kHeartbeat:
      if (auto beat = ipc::read<ipc::Heartbeat>(p); !beat) {
        w->fail_protocol(beat.status());
      } else {
        supervisor_.on_successor_heartbeat(slot, now, beat->rss_bytes);
      }
      return;
    case ipc::MessageType::kLeaving: {
      auto leaving = ipc::read<ipc::Leaving>(p);
      if (!leaving) {
        w->fail_protocol(leaving.status());
        return;
      }
      supervisor_.on_successor_failed(
          slot,
          fmt::format("left on its own ({}: RSS {:.1f}MB, max_memory {})", leaving->reason,
                      static_cast<double>(leaving->rss_bytes) / 1048576.0,
                      config::format_bytes(candidate_->config().max_memory_bytes)),
          false, now);
      kick();
      return;
    }
    default:
      // It was given no work: anything else is outside the contract.
      supervisor_.on_successor_failed(
          slot, "sent " + std::string(ipc::message_info(f.type).name) + " before it had any work",
          false, now);
      kick();
      return;
  }
}

void Daemon::on_successor_exit(int slot, int64_t code, int signum) {
  pid_t pid = successors_[slot]->pid();
  ExitInfo e = classify_exit(code, signum, std::nullopt, std::nullopt, false, unix_ms_now());
  spdlog::warn("slot {}: new worker pid {} exited: {}", slot, pid, describe(e));
  successors_.erase(slot);  // from inside its own exit callback: allowed
  supervisor_.on_successor_failed(slot, "exited: " + describe(e), true, monotonic_ms());
  kick();
}

}  // namespace corral::master
