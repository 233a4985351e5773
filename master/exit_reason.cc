#include "master/exit_reason.h"

#include "shared/exit_codes.h"
#include "shared/proc.h"

namespace corral::master {

std::string_view to_string(ExitReason r) {
  switch (r) {
#define CORRAL_EXIT_CASE(name, text) \
  case ExitReason::name:             \
    return text;
    CORRAL_EXIT_REASONS(CORRAL_EXIT_CASE)
#undef CORRAL_EXIT_CASE
  }
  return "unknown";
}

api::LastExit last_exit_entry(const ExitInfo& e) {
  return {std::string(to_string(e.reason)),
          e.code,
          e.signal,
          e.signal != 0 ? signal_name(e.signal) : "",
          iso8601_utc(e.at_unix_ms),
          e.detail};
}

nlohmann::json to_json(const ExitInfo& e) { return api::to_json(last_exit_entry(e)); }

std::string describe(const ExitInfo& e) {
  std::string s(to_string(e.reason));
  if (e.signal != 0) {
    s += " (" + signal_name(e.signal) + ")";
  } else {
    s += " (exit " + std::to_string(e.code) + ")";
  }
  if (!e.detail.empty()) s += ": " + e.detail;
  return s;
}

ExitInfo classify_exit(int64_t code, int signal, std::optional<ExitReason> kill_reason,
                       std::optional<ExitReason> left_reason, bool kernel_oom_kill,
                       int64_t at_unix_ms) {
  ExitInfo e;
  e.code = code;
  e.signal = signal;
  e.at_unix_ms = at_unix_ms;
  // What the worker said of its own leaving is the better account: the master may have had to
  // kill it while it was on its way out.
  if (left_reason) {
    e.reason = *left_reason;
  } else if (kill_reason) {
    e.reason = *kill_reason;
  } else if (kernel_oom_kill || (signal == 0 && code == kExitOutOfMemory)) {
    e.reason = ExitReason::kOomKernel;
  } else if (signal == 0 && code == kExitMemorySoft) {
    e.reason = ExitReason::kMemorySoft;
  } else if (signal == 0 && code == kExitInitFailed) {
    e.reason = ExitReason::kInitFailed;
  } else if (signal != 0) {
    e.reason = ExitReason::kSignal;
  } else {
    e.reason = ExitReason::kCrash;  // includes an unrequested exit 0
  }
  return e;
}

}  // namespace corral::master
