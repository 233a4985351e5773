// Small facts about processes and time, read from the kernel. Any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace corral {

// Resident set size of `pid` in bytes (from /proc/<pid>/statm), or 0 when it cannot be read.
uint64_t rss_bytes(pid_t pid);
// The same for this process.
uint64_t self_rss_bytes();
// The most `pid` has held resident since it started, in bytes (VmHWM of /proc/<pid>/status),
// or 0 when it cannot be read (the process is gone or a zombie).
uint64_t peak_rss_bytes(pid_t pid);
// The read and write system calls `pid` has made (syscr + syscw of /proc/<pid>/io); nullopt
// when it cannot be read. A loop that is starved of CPU still makes them when it runs; one stuck
// inside a callback, or stopped, makes none.
std::optional<uint64_t> io_syscalls(pid_t pid);
// What /proc/<pid>/stat says of a process's CPU time and threads.
struct ProcStat {
  uint64_t cpu_ticks = 0;  // user + system time, in clock ticks (sysconf(_SC_CLK_TCK) a second)
  uint64_t threads = 0;
};
// nullopt when the process is gone, is a zombie, or its stat file cannot be read (another
// host's pid, a /proc without it).
std::optional<ProcStat> proc_stat(pid_t pid);
// This process's environment as NAME=value entries, without its secrets (CORRAL_SECRET_*):
// what a program corral starts for a user (an exec step, a load test's target) begins from.
std::vector<std::string> environment_without_secrets();
// The path of this process's executable (uv_exepath), or /proc/self/exe when it cannot be read.
std::string own_executable();
// "SIGKILL" for 9; "SIG<n>" for numbers without a name.
std::string signal_name(int signum);
// Milliseconds on a monotonic clock (for deadlines and intervals).
uint64_t monotonic_ms();
// Wall-clock time as ISO 8601 UTC, e.g. "2026-11-30T15:00:00Z" (for people and the journal).
std::string iso8601_utc(int64_t unix_ms);
int64_t unix_ms_now();

}  // namespace corral
