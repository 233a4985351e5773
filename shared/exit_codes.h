// Exit codes a worker uses to tell the master why it left. The master turns them, together with
// what it did itself (a kill for a hang, a hard memory kill, a stop), into an exit reason.
#pragma once

namespace corral {

constexpr int kExitOk = 0;                // asked to stop, stopped cleanly
constexpr int kExitUsage = 2;             // bad command line or input file (CLI)
constexpr int kExitDaemonNotRunning = 3;  // CLI: no daemon answers on the socket
constexpr int kExitNotReady = 4;  // CLI: the daemon cannot take it now (no worker ready, stopping)
constexpr int kExitInitFailed = 78;       // cannot initialise (bad config): do not restart quickly
constexpr int kExitMemorySoft = 79;       // the worker saw its own RSS past max_memory and left
constexpr int kExitOutOfMemory = 80;      // an allocation failed under the kernel backstop
constexpr int kExitProtocol = 81;  // the master broke the IPC contract (or vanished mid-frame)

}  // namespace corral
