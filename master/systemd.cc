#include "master/systemd.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>

namespace corral::systemd {

bool notify_enabled() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  return socket != nullptr && *socket != '\0';
}

bool notify(const std::string& state) { return sd_notify(0, state.c_str()) > 0; }

uint64_t watchdog_interval_ms() {
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? usec / 1000 : 0;
}

}  // namespace corral::systemd
