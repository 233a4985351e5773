// Load tests side by side (`corral compare A B`, `corral load --baseline A`): each metric of a
// baseline and of a test, the change, and whether it crossed a limit on how much it may
// regress ("p99: +10%": the corrected p99 may rise by 10 % at most; "rps: -5%": the rate may
// fall by 5 % at most). Pure functions over GET /loads/<id> answers; any thread.
//
// A side may be several tests, repeats of one test: each metric is then their median, and the
// spread (lowest to highest) is shown. When both sides have repeats, a limit crossed by the
// medians counts as a regression only when the two spreads do not overlap: a difference within
// the tests' own spread is noise, and the comparison says so.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/junit.h"
#include "cli/table.h"
#include "shared/api/loads.h"
#include "shared/status.h"

namespace corral::cli {

// A limit on how much a metric may regress.
struct RegressionLimit {
  std::string metric;  // a name of comparison_metrics()
  double percent = 0;  // how far it may move the bad way; for errors, in points of the rate
  std::string text;    // as given: "p99: +10%"
};

// "p99: +10%", "rps: -5%", "errors: +1%": the sign must be the metric's bad way (latency,
// errors, dropped and RSS rise; rps falls). Fails naming the metric, or listing the known ones.
Result<RegressionLimit> parse_regression(std::string_view text);
// The limits `corral compare` applies when none is given.
std::vector<RegressionLimit> default_regressions();
// Each of `texts` (--max-regression), or the defaults when there is none.
Result<std::vector<RegressionLimit>> parse_regressions(const std::vector<std::string>& texts);
// The names a limit may use, in the order a comparison lists them.
std::vector<std::string> comparison_metrics();

// One metric of both sides.
struct MetricChange {
  std::string metric;
  double base = 0, test = 0;                                        // the medians of each side
  double base_low = 0, base_high = 0, test_low = 0, test_high = 0;  // each side's spread
  // The change the bad way, in percent of the base (for errors, in points of the rate); +inf
  // when the base is 0 and the test's is not.
  double worse_by = 0;
  std::optional<RegressionLimit> limit;  // the limit on it, if any
  bool crossed = false;                  // the limit is crossed by the medians
  bool within_spread = false;  // crossed, but both sides have repeats and their spreads overlap
  bool regressed() const { return crossed && !within_spread; }
};

struct Comparison {
  std::vector<std::string> base_ids, test_ids;
  std::vector<MetricChange> metrics;  // those both sides have
  std::vector<RegressionLimit> limits;
  bool regressed() const;
};

// Compares `tests` with `base` (each at least one test) under `limits`. A limit on a metric
// neither side has (the target's RSS, without a target) is left out.
Comparison compare_loads(const std::vector<api::LoadAnswer>& base,
                         const std::vector<api::LoadAnswer>& tests,
                         std::vector<RegressionLimit> limits);

// The table: metric, base, test, change, limit, verdict; then one line per regression.
std::string render_comparison(const Comparison& c, TableStyle style);
// A JUnit test case per metric with a limit, failed when it regressed (classname
// `<suite>.baseline`).
std::vector<JunitCase> comparison_cases(const Comparison& c, const std::string& suite,
                                        double seconds);

}  // namespace corral::cli
