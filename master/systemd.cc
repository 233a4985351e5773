#include "master/systemd.h"

#include <systemd/sd-daemon.h>

namespace corral::systemd {

bool notify(const std::string& state) { return sd_notify(0, state.c_str()) > 0; }

uint64_t watchdog_interval_ms() {
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? usec / 1000 : 0;
}

}  // namespace corral::systemd
