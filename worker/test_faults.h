// Faults a worker can be told to commit, for the integration tests of the supervisor.
//
// They come only from the CORRAL_TEST_FAULT environment variable of the daemon's process
// (workers inherit it), never from the control API or a scenario: whoever can set a daemon's
// environment can already kill its workers. Format: a comma-separated list of `kind` or
// `kind@slot` (only that slot), e.g. `hang@0,crash_at_start@1`.
//
//   crash_at_start  exit 1 right after start, before saying hello
//   init_fail       exit with the "cannot initialise" code (kExitInitFailed)
//   never_ready     say hello but never ready
//   hang            block the loop forever ~0.5 s after ready (heartbeats stop)
//   garbage_frame   send bytes that are not a valid frame ~0.5 s after ready
//   bad_payload     send a well-framed heartbeat whose fields have the wrong types
//   alloc_soft      grow the heap by 4 MiB every 100 ms while the loop keeps running
//   alloc_hard      block the loop, grow the heap to 1.375x max_memory (past the master's
//                   hard limit, short of the kernel backstop), then sleep
//   alloc_kernel    one allocation of 4x max_memory (refused under RLIMIT_DATA)
//   throw           throw once from a timer callback ~0.5 s after ready, and once from the
//                   read callback of the IPC pipe after the next frame: both must be caught
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corral::worker {

enum class Fault {
  kNone,
  kCrashAtStart,
  kInitFail,
  kNeverReady,
  kHang,
  kGarbageFrame,
  kBadPayload,
  kAllocSoft,
  kAllocHard,
  kAllocKernel,
  kThrow
};

// The fault `spec` asks of `slot` (the first that applies), or kNone.
Fault parse_fault(std::string_view spec, int slot);
// Reads CORRAL_TEST_FAULT.
Fault fault_from_env(int slot);
// CORRAL_TEST_POISON_INSTANCE=N: every worker aborts whenever a step of instance N (of any
// run) begins, as a scenario that crashes whoever runs it would.
std::optional<uint32_t> poison_instance_from_env();

}  // namespace corral::worker
