// The worker role: `corral worker --slot N --home DIR`, spawned by the master with the IPC pipe
// on fd 3 (see shared/ipc/protocol.h). Not for people to run by hand.
#pragma once

namespace corral::worker {

// argv as given after the "worker" word. Returns the process exit code (shared/exit_codes.h).
int run_worker(int argc, char** argv);

}  // namespace corral::worker
