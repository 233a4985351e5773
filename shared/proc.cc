#include "shared/proc.h"

#include <uv.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

#include "shared/test_hooks.h"

namespace corral {

uint64_t rss_bytes(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/statm", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  static const long page = sysconf(_SC_PAGESIZE);
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(page);
}

uint64_t self_rss_bytes() { return rss_bytes(getpid()); }

std::vector<std::string> environment_without_secrets() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::string_view(*e).rfind("CORRAL_SECRET_", 0) != 0) env.emplace_back(*e);
  }
  return env;
}

uint64_t peak_rss_bytes(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/status", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmHWM: %llu kB", &kb) == 1) break;
  }
  std::fclose(f);
  return static_cast<uint64_t>(kb) * 1024;
}

std::optional<uint64_t> io_syscalls(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/io", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return std::nullopt;
  unsigned long long value = 0, total = 0;
  char name[32];
  int found = 0;
  while (std::fscanf(f, "%31[^:]: %llu\n", name, &value) == 2) {
    if (std::strcmp(name, "syscr") == 0 || std::strcmp(name, "syscw") == 0) {
      total += value;
      ++found;
    }
  }
  std::fclose(f);
  if (found != 2) return std::nullopt;
  return total;
}

std::optional<ProcStat> proc_stat(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces and ')': skip to the last.
  size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 > text.size()) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  // Fields from 3 (state): state ppid pgrp session tty tpgid flags minflt cminflt majflt
  // cmajflt utime stime cutime cstime priority nice num_threads.
  std::string state;
  uint64_t v[18] = {};
  fields >> state;
  for (uint64_t& x : v) fields >> x;
  if (!fields || state == "Z" || state == "X") return std::nullopt;
  return ProcStat{v[10] + v[11], v[16]};
}

std::string signal_name(int signum) {
  const char* abbrev = sigabbrev_np(signum);
  if (abbrev == nullptr) return "SIG" + std::to_string(signum);
  return std::string("SIG") + abbrev;
}

std::string own_executable() {
  char buf[4096];
  size_t size = sizeof(buf);
  if (uv_exepath(buf, &size) != 0) return "/proc/self/exe";
  return std::string(buf, size);
}

uint64_t monotonic_ms() {
  using namespace std::chrono;
  return static_cast<uint64_t>(
      duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count());
}

namespace {

// CORRAL_TEST_CLOCK_STEP="<ms>@<unix ms>": from that moment on, this process's wall clock
// reads <ms> later (a clock stepped forward, as NTP or an operator may do). Every process of a
// daemon given it steps at the same instant. Read once.
struct ClockStep {
  int64_t at_ms = 0, by_ms = 0;
  ClockStep() {
    const char* v = test_hook("CORRAL_TEST_CLOCK_STEP");
    if (v == nullptr) return;
    char* end = nullptr;
    by_ms = std::strtoll(v, &end, 10);
    if (end != nullptr && *end == '@') at_ms = std::strtoll(end + 1, nullptr, 10);
    if (at_ms == 0) by_ms = 0;
  }
};

}  // namespace

int64_t unix_ms_now() {
  using namespace std::chrono;
  const int64_t now = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  if constexpr (kTestHooks) {
    static const ClockStep step;
    if (step.by_ms != 0 && now >= step.at_ms) return now + step.by_ms;
  }
  return now;
}

std::string iso8601_utc(int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace corral
