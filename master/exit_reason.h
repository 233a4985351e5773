// Why a worker process ended: what the master did itself (a kill for a hang or a hard memory
// limit, a stop) combined with how the process ended (exit code, signal).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "shared/api/workers.h"

namespace corral::master {

#define CORRAL_EXIT_REASONS(X)                                                                 \
  X(kCrash, "crash")            /* exited non-zero on its own */                               \
  X(kSignal, "signal")          /* killed by a signal it was not sent by the master */         \
  X(kMemorySoft, "memory_soft") /* saw its own RSS past max_memory and left */                 \
  X(kMemoryHard, "memory_hard") /* killed by the master past the hard memory limit */          \
  X(kOomKernel, "oom_kernel")   /* stopped by the kernel backstop (cgroup OOM, RLIMIT_DATA) */ \
  X(kHung, "hung")              /* stopped heartbeating; killed */                             \
  X(kStopped, "stopped")        /* asked to stop (shutdown, scale, restart) */                 \
  X(kInitFailed, "init_failed") /* exited with the "cannot initialise" code */                 \
  X(kNotReady, "not_ready")     /* did not say ready within ready_timeout; killed */           \
  X(kProtocolError, "protocol_error") /* broke the IPC contract; killed */                     \
  X(kSpawnFailed, "spawn_failed")     /* the process could not be started at all */

enum class ExitReason {
#define CORRAL_EXIT_ENUM(name, text) name,
  CORRAL_EXIT_REASONS(CORRAL_EXIT_ENUM)
#undef CORRAL_EXIT_ENUM
};

std::string_view to_string(ExitReason r);

struct ExitInfo {
  ExitReason reason = ExitReason::kCrash;
  int64_t code = 0;  // exit status, when it exited
  int signal = 0;    // terminating signal, when killed
  int64_t at_unix_ms = 0;
  std::string detail;  // e.g. the protocol error, the RSS that crossed the limit
};

// As GET /workers shows it (shared/api/workers.h).
api::LastExit last_exit_entry(const ExitInfo& e);
nlohmann::json to_json(const ExitInfo& e);
// "signal SIGKILL", "crash (exit 1)", "hung (SIGKILL)": for reasons and logs.
std::string describe(const ExitInfo& e);

// Decides the reason from what the master knows. `left_reason` is set when the worker announced
// why it leaves (it wins); `kill_reason` when the master itself killed or stopped the process.
ExitInfo classify_exit(int64_t code, int signal, std::optional<ExitReason> kill_reason,
                       std::optional<ExitReason> left_reason, bool kernel_oom_kill,
                       int64_t at_unix_ms);

}  // namespace corral::master
