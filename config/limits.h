// Per-target limits: how many requests may be in flight to one origin at once, and how many
// may start per second, counted across all of a daemon's workers. Set in the daemon's config
// (every scenario run's requests count) or in a scenario (that run's requests count); a request
// waits until every limit on its origin lets it go. docs/scenarios.md "Per-target limits".
//
//   "limits": {
//     "http://mail.internal:8025": {"max_in_flight": 20, "rate": "50/s", "burst": 10},
//     "https://api.example.com":   {"rate": "600/m"}
//   }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::config {

struct TargetLimit {
  std::string origin;          // "scheme://host:port" (http::origin_of)
  uint32_t max_in_flight = 0;  // requests sent and not yet answered; 0: not limited
  double rate = 0;             // requests started per second; 0: not limited
  uint32_t burst = 1;          // with `rate`: requests that may start at once after a pause

  bool operator==(const TargetLimit&) const = default;
};
using TargetLimits = std::vector<TargetLimit>;

constexpr uint32_t kMaxInFlightLimit = 1000000;
constexpr double kMaxRateLimit = 1e6;  // per second
constexpr size_t kMaxLimitedOrigins = 64;

// Reads a `limits` object. The message names the field at fault, under `path`:
// `limits["http://a:1"].rate: expected a rate like "50/s", got "fast"`. With `templates`, a key
// holding "{{" is kept as written, for the scenario parser to check and the run to expand
// (scenario::run_limits); otherwise every key must be an origin.
Result<TargetLimits> parse_limits(const nlohmann::json& j, const std::string& path,
                                  bool templates = false);
// The origin a `limits` key names: `key` normalized ("http://Host" -> "http://host:80"); an
// error naming `path` when it is not an http(s) URL of scheme and host alone (`bare`), or with
// `bare` false, not an http(s) URL at all (a template's expansion may carry a path).
Result<std::string> limit_origin(const std::string& key, const std::string& path, bool bare);
// The config form, which parse_limits reads back.
nlohmann::json limits_to_json(const TargetLimits& limits);
// "50/s", "600/m", "1000/h" or a number (per second) -> requests per second.
Result<double> parse_rate(const nlohmann::json& j);

}  // namespace corral::config
