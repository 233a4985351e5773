// What the master tells systemd (Type=notify): READY=1 once every worker is ready the first
// time, RELOADING=1 and READY=1 around a reload, STOPPING=1, a STATUS= line when it changes
// (at most once a second), and WATCHDOG=1 from the loop's tick at half the watchdog interval,
// so that a master whose loop is stuck is restarted by systemd. No-ops without $NOTIFY_SOCKET.
#include <spdlog/spdlog.h>

#include "master/daemon_impl.h"
#include "master/systemd.h"
#include "shared/proc.h"

namespace corral::master {

std::string Daemon::status_line() const {
  size_t running = 0, queued = 0;
  for (const auto& run : runs_.all()) {
    running += run->counts[static_cast<size_t>(InstanceState::kRunning)];
    queued += run->counts[static_cast<size_t>(InstanceState::kQueued)];
  }
  std::string line = std::to_string(supervisor_.ready_count()) + "/" +
                     std::to_string(supervisor_.wanted()) + " workers ready, " +
                     std::to_string(running) + " instances running, " + std::to_string(queued) +
                     " queued";
  const ReloadStatus& r = supervisor_.reload();
  if (r.phase == ReloadStatus::Phase::kRunning) {
    line += "; reload " + std::to_string(r.number) + ": " + std::to_string(r.replaced.size()) +
            " of " + std::to_string(r.slots.size()) + " replaced";
  } else if (r.phase == ReloadStatus::Phase::kFailed) {
    line += "; reload " + std::to_string(r.number) + " failed at slot " + std::to_string(r.slot);
  }
  return line;
}

void Daemon::notify_systemd(uint64_t now_ms) {
  if (watchdog_ms_ != 0 && now_ms - last_watchdog_ms_ >= watchdog_ms_ / 2) {
    last_watchdog_ms_ = now_ms;
    systemd::notify("WATCHDOG=1");
  }
  if (!notify_enabled_ || supervisor_.shutting_down()) return;
  if (!ready_notified_ && supervisor_.wanted() > 0 &&
      supervisor_.ready_count() == supervisor_.wanted()) {
    ready_notified_ = true;
    last_status_ = status_line();
    last_status_ms_ = now_ms;
    if (systemd::notify("READY=1\nSTATUS=" + last_status_)) spdlog::info("told systemd: ready");
    return;
  }
  if (now_ms - last_status_ms_ < 1000) return;
  std::string line = status_line();
  if (line == last_status_) return;
  last_status_ = line;
  last_status_ms_ = now_ms;
  systemd::notify("STATUS=" + line);
}

}  // namespace corral::master
