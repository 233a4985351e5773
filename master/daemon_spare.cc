// The spare worker: one process started in advance and kept waiting for its welcome, so that a
// slot whose worker died gets a ready one in the time the master takes to notice the exit and
// send a welcome, not the ~40 ms a new process spends loading corral's shared libraries (libcurl
// and its TLS, Kerberos and LDAP dependencies). Its welcome names the slot it serves; then the
// next spare starts. A spare that exits on its own is started again after a growing delay.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>

#include "master/daemon_impl.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

// After `failures` spares in a row exited on their own: 2 s, 4 s, ... up to a minute.
uint64_t spare_delay_ms(int failures) {
  return std::min<uint64_t>(60000, 1000ull << std::min(failures, 6));
}

}  // namespace

void Daemon::maybe_start_spare(uint64_t now_ms) {
  if (cfg_.spare_workers == 0 || spare_ != 0 || supervisor_.shutting_down() ||
      now_ms < spare_due_ms_ || supervisor_.ready_count() < supervisor_.wanted()) {
    return;
  }
  uint64_t seq = ++spare_count_;
  WorkerProcess::Callbacks cb;
  cb.on_frame = [this, seq](ipc::Frame&& f) { on_spare_frame(seq, std::move(f)); };
  cb.on_protocol_error = [this, seq](const Status& st) {
    if (seq == spare_) drop_spare("protocol error: " + st.message());
  };
  cb.on_exit = [this, seq](int64_t code, int signum) { on_spare_exit(seq, code, signum); };
  SpawnSpec spec{image_->path(), image_->exec_path(), {"worker", "--spare", "--home", cfg_.home}};
  auto w = WorkerProcess::spawn(loop_, spec, std::move(cb));
  if (!w) {
    spdlog::warn("spare worker: {}", w.status().message());
    spare_failures_ += 1;
    spare_due_ms_ = now_ms + spare_delay_ms(spare_failures_);
    return;
  }
  spdlog::debug("spare worker pid {} started", (*w)->pid());
  spare_ = seq;
  spare_said_hello_ = false;
  spare_image_ = image_;
  spares_[seq] = std::move(*w);
}

std::unique_ptr<WorkerProcess> Daemon::take_spare(const WorkerImage& image) {
  if (spare_ == 0 || spare_image_.get() != &image || spares_[spare_]->exited()) return nullptr;
  std::unique_ptr<WorkerProcess> w = std::move(spares_[spare_]);
  spares_.erase(spare_);
  spare_ = 0;
  spare_failures_ = 0;
  spare_due_ms_ = 0;  // the next one starts once every slot is ready again
  return w;
}

void Daemon::drop_spare(const std::string& why) {
  if (spare_ == 0) return;
  spdlog::info("spare worker pid {} dropped: {}", spares_[spare_]->pid(), why);
  spares_[spare_]->signal(SIGKILL);  // it stays in spares_ until its exit is reaped
  spare_ = 0;
}

void Daemon::on_spare_frame(uint64_t seq, ipc::Frame&& f) {
  if (seq != spare_) return;
  if (f.type != ipc::MessageType::kHello) {
    drop_spare(std::string("it sent ") + std::string(ipc::message_info(f.type).name) +
               " before its welcome");
  } else if (Status st = ipc::check_hello(f.payload); !st) {
    drop_spare("it " + st.message());
    spare_failures_ += 1;
    spare_due_ms_ = monotonic_ms() + 60000;
  } else {
    spare_said_hello_ = true;
  }
}

void Daemon::on_spare_exit(uint64_t seq, int64_t code, int signum) {
  if (seq == spare_) {
    ExitInfo e = classify_exit(code, signum, std::nullopt, std::nullopt, false, unix_ms_now());
    spdlog::warn("spare worker pid {} exited: {}", spares_[seq]->pid(), describe(e));
    spare_ = 0;
    spare_failures_ += 1;
    spare_due_ms_ = monotonic_ms() + spare_delay_ms(spare_failures_);
  }
  spares_.erase(seq);  // from inside its own exit callback: allowed
}

}  // namespace corral::master
