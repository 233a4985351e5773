// How load tests read in the terminal: the live line while one runs, and the summary at its
// end (like k6's). Pure functions over the loads API's answer (GET /loads/<id>, read into
// shared/api/loads.h); any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/junit.h"
#include "cli/table.h"
#include "shared/api/loads.h"

namespace corral::cli {

// "3.14" with `decimals` decimals; "12.50%" from 0.125; a latency with the precision it
// deserves: "0.412ms", "2.65ms", "37.1ms", "412ms", "1.25s".
std::string fixed(double v, int decimals);
std::string percent(double fraction);
std::string latency_text(double ms);
// A threshold's value from GET /loads/<id> in its metric's unit: "7.16ms", "0.04%", "1000".
std::string threshold_value(const api::ThresholdOutcome& th);
// One of the slowest requests: "48.2ms  step 0 get  200  at 12s  trace 4bf92f35…" (the status,
// or the outcome of one that got none).
std::string slow_request_text(const api::LoadSlowRequest& q);
// The slowest requests the summary lists (the API has up to 10).
constexpr size_t kSlowestShown = 5;

// "l1-2f3a  running  12s/30s  vus 20  rps 7614  p99 3.8ms  errors 0.00%": from the last
// complete second of the series.
std::string render_load_progress(const api::LoadAnswer& test);
// The whole test: model, requests and iterations, errors by class, latency (corrected and
// raw when the model has a schedule), each step, and each threshold with a tick or a cross.
std::string render_load_summary(const api::LoadAnswer& test);
// The tests of GET /loads, a row each: id, scenario, model, state, workers, elapsed time,
// requests, requests/s, p99, error rate, created.
std::string render_loads_table(const std::vector<api::LoadAnswer>& loads, TableStyle style);
// JUnit XML for a finished test: one testcase per threshold (classname "<scenario>.thresholds",
// named as written, a failure with its value when crossed) and one testcase "load test" for
// the test itself, failed when it was stopped or aborted, with its reason; then `extra` (a
// comparison with a baseline, cli/compare.h).
std::string render_load_junit(const api::LoadAnswer& test,
                              const std::vector<JunitCase>& extra = {});

}  // namespace corral::cli
