// Parsing and validating a load section.
#pragma once

#include <nlohmann/json.hpp>

#include "config/load/model.h"
#include "shared/status.h"

namespace corral::load {

// The largest numbers a load section may ask for.
constexpr double kMaxVus = 1000000;
constexpr double kMaxRate = 10000000;  // iterations per second
constexpr double kMaxConnections = 1000000;
constexpr uint64_t kMaxHosts = 1000;  // "hosts": the hosts of a cluster to spread over
constexpr uint64_t kMaxDurationMs = 7 * 24 * 3600 * 1000ull;

// Builds the model from a "load" object (see docs/load.md). Which model it is comes from
// "model", else from which of "vus", "rate" and "connections" is given (stages alone: closed).
// Errors are kInvalidArgument with the path of the field at fault, from "load":
//   `load.stages[1].target: expected a number from 0 to 1000000, got -3`
//   `load.thresholds.latency: "p99 > " has no bound`
// Pure; any thread.
Result<LoadSpec> parse_load(const nlohmann::json& load);

// One threshold expression of `metric_key` ("latency{step:login}"), for parse_load and the
// command line's --threshold. `path` prefixes the error messages.
Result<Threshold> parse_threshold(const std::string& metric_key, const nlohmann::json& item,
                                  const std::string& path);

// The "watch" object of a load section (`path` prefixes the error messages). With
// `started_target`, the load section starts its target, whose pid is watched: "pid" may be
// left out, and the process's metrics (target.rss, ...) are there to stop on.
Result<Watch> parse_watch(const nlohmann::json& watch, const std::string& path,
                          bool started_target = false);

// The "target" object of a load section (config/load/target.cc).
Result<TargetCommand> parse_target(const nlohmann::json& target, const std::string& path);

}  // namespace corral::load
