// Per-target limits on the wire (config/limits.h). The master splits each limit between its
// workers and tells each its share in a `limits` frame; each worker reports in its heartbeat
// what every limit's requests are doing there, which the master splits the next shares by and
// shows in /metrics.
//
//   limits     {"version": u64, "shares": [{"run": str, "origin": str, "max_in_flight": u32,
//               "rate": double, "burst": double}, ...]}  the worker's whole table; "run" is ""
//               for a daemon-wide limit; "max_in_flight" or "rate" absent: not limited
//   heartbeat  "limits": {"version": u64 (of the shares it applies), "use": [{"run", "origin",
//               "in_flight": u64, "waiting": u64, "started": u64, "throttled": u64}, ...]}
//               (the last two count since the worker started)
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::ipc {

// One limit: of one run ("" for the daemon's config) on one origin.
struct LimitKey {
  std::string run;
  std::string origin;
  auto operator<=>(const LimitKey&) const = default;
};

struct LimitShare {
  LimitKey key;
  std::optional<uint32_t> max_in_flight;  // nullopt: not limited
  std::optional<double> rate;             // requests per second; nullopt: not limited
  double burst = 1;                       // the bucket's size (the worker holds at least 1)
  bool operator==(const LimitShare&) const = default;
};

struct LimitShares {
  uint64_t version = 0;
  std::vector<LimitShare> shares;
};

struct LimitUse {
  LimitKey key;
  uint64_t in_flight = 0;  // let through, not yet answered
  uint64_t waiting = 0;    // held back by the limit now
  uint64_t started = 0;    // let through, since the worker started
  uint64_t throttled = 0;  // had to wait first, since the worker started
  bool operator==(const LimitUse&) const = default;
};

struct LimitUses {
  uint64_t version = 0;
  std::vector<LimitUse> use;
};

// A worker holds at most this many limits (daemon-wide, and of each run it runs).
constexpr size_t kMaxLimitShares = 4096;

nlohmann::json to_json(const LimitShares& s);
nlohmann::json to_json(const LimitUses& u);
// nullopt when the payload has the wrong shape (a protocol error).
std::optional<LimitShares> limit_shares_from_json(const nlohmann::json& j);
std::optional<LimitUses> limit_uses_from_json(const nlohmann::json& j);

}  // namespace corral::ipc
