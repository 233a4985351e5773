// The service manager's side channel, for `corral daemon` under systemd with Type=notify:
// state changes (READY=1, RELOADING=1, STOPPING=1, STATUS=...) and the watchdog's keep-alive,
// sent through libsystemd's sd_notify to $NOTIFY_SOCKET. Without that variable every call is a
// no-op, so the daemon calls them unconditionally. Loop thread only.
#pragma once

#include <cstdint>
#include <string>

namespace corral::systemd {

// Whether $NOTIFY_SOCKET names a socket: there is someone to tell.
bool notify_enabled();

// Sends `state` ("READY=1\nSTATUS=2/2 workers ready"); false when there is no socket or the send
// failed (nothing a caller can do about either).
bool notify(const std::string& state);

// The interval systemd expects WATCHDOG=1 within ($WATCHDOG_USEC, for this process), in ms;
// 0 when the watchdog is off.
uint64_t watchdog_interval_ms();

}  // namespace corral::systemd
