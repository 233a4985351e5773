// `corral load --find-max --search bisect`: the breaking point. Each probe is a load test of
// its own at a constant load (with a "target", a fresh server each); a probe fails when its
// test does not pass: the target died, crossed a stop_when, or a threshold broke (the
// bounds, as in the knee search). The load is stepped up by a factor until a probe fails,
// then the interval between the highest load that held and the lowest that failed is halved
// until its half-width is within `precision` of its middle. With `repeat` probes per load, a
// load fails when any of them does, and the report says in how many. Pure over the loads
// API's answers; the verb runs the probes. Any thread.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/find_max.h"
#include "shared/api/loads.h"
#include "shared/status.h"

namespace corral::cli {

struct BisectSearch {
  KneeBounds bounds;
  double factor = 2;             // while no probe has failed, each load is this times the last
  double precision = 0.05;       // stop once the half-width is within this of the middle
  int repeat = 1;                // probes per load
  int max_probes = 20;           // tests run in all, at most
  std::string duration = "10s";  // each probe's
};

// Why a finished probe failed ("the target was killed by SIGABRT", "crossed target.rss > 1GB",
// "the target ran out of memory: ...", "crossed latency: p99 <= 1000ms"), or "" when it passed.
std::string probe_failure(const api::LoadAnswer& test);

// The search. `run_probe(load)` runs a load test of that section to its end (and its target's
// stop) and returns GET /loads/<id>, read. Prints each probe and the verdict to `out`. Returns
// {"unit", "probes": [{"target", "test", "failed", "why", "at_death"}...], "holds", "fails",
// "estimate", "precision", "why"} (holds/fails null when unknown), or the first probe's error.
Result<nlohmann::json> find_breaking_point(
    nlohmann::json load, const BisectSearch& search,
    const std::function<Result<api::LoadAnswer>(const nlohmann::json&)>& run_probe,
    std::ostream& out);

}  // namespace corral::cli
