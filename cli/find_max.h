// `corral load --find-max`: the knee search. The load is stepped up (each step a load test of
// its own at a constant target: VUs, rate or connections), and the search stops at the first
// step past the knee: its p99 above a bound, its error rate above a bound, more than 1 % of
// its arrivals dropped (open model), or its throughput no longer growing with the load (less
// than half the relative growth offered: under 5 % more for 10 % more). The highest
// sustainable load is the last step before it. Pure functions over the loads API's JSON; the
// loop that runs the steps is in cli/verbs/load.cc. Any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/api/loads.h"

#include "shared/status.h"

namespace corral::cli {

struct KneeBounds {
  double p99_ms = 1000;       // corrected p99 of a sustainable step
  double error_rate = 0.01;   // failed requests / requests
  double dropped_rate = 0.01; // open model: dropped arrivals / arrivals
  double min_gain = 0.5;      // throughput growth / offered growth, at least
};

struct KneeStep {
  std::string id;
  double target = 0;  // VUs, iterations per second or connections
  double rps = 0;     // requests per second achieved
  double p50_ms = 0;
  double p99_ms = 0;
  double error_rate = 0;
  double dropped_rate = 0;
  std::string state;
};

// The step's measurements from GET /loads/<id> of its finished test.
KneeStep knee_step(const api::LoadAnswer& test, double target);
// Why `cur` is past the knee (e.g. "p99 1.23s > 1s"), or "" when it is sustainable. `prev` is
// the step before it (null for the first).
std::string past_knee(const KneeStep* prev, const KneeStep& cur, const KneeBounds& bounds);
// The next target after `target`: `factor` times it, at least one more, rounded to a whole
// number unless `fractional`.
double next_target(double target, double factor, bool fractional);
struct KneeSearch {
  KneeBounds bounds;
  double factor = 1.5;      // each step's target is this times the last one's
  int max_steps = 12;
  std::string duration = "10s";  // each step's
};

// The load section of one step (a test at a constant target): the section with its stages,
// start and duration replaced by `duration` and its thresholds by the bounds; which field
// holds the target ("vus", "rate" or "connections"), its unit, and the section's own target
// (10 when it has none).
struct StepLoad {
  nlohmann::json load;
  std::string key, unit;
  double start = 10;
  // The section at `target`.
  nlohmann::json at(double target) const;
};
StepLoad step_load(nlohmann::json load, const std::string& duration, const KneeBounds& bounds);

// The search: starting from the load section's target (VUs, rate or connections; 10 when it
// has none), runs one step after another with `run_step(load)`, which runs a load test of that
// section to its end and returns GET /loads/<id>, read (or why it could not). Prints the table and
// the verdict to `out`. Returns {"unit", "steps": [...], "broke": index or null, "why",
// "highest": step or null}, or the first step's error.
Result<nlohmann::json> find_knee(
    nlohmann::json load, const KneeSearch& search,
    const std::function<Result<api::LoadAnswer>(const nlohmann::json&)>& run_step,
    std::ostream& out);

// The steps as a table, then the verdict: the highest sustainable step and what broke first
// (`broke` is the index of the step past the knee, or steps.size() when none was).
std::string render_knee(const std::vector<KneeStep>& steps, size_t broke, const std::string& why,
                        const std::string& unit);

}  // namespace corral::cli
