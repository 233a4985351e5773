// The answer of GET /loads/<id> (and each element of GET /loads): written by the master
// (master/loads.cc) and read by the CLI (`corral load`'s progress line, summary, table, HTML
// report and JUnit), from these structs on both sides. Reading is strict about types and
// lenient about presence, as in workers.h. Latencies are in milliseconds. Pure, any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::api {

// A latency distribution, in ms.
struct Latency {
  uint64_t count = 0;
  double min = 0, mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, max = 0;
  bool operator==(const Latency&) const = default;
};

// Requests that failed, by class.
struct LoadErrors {
  uint64_t count = 0;
  double rate = 0;  // of the requests
  uint64_t status = 0, transport = 0, timeout = 0, expect = 0;
  bool operator==(const LoadErrors&) const = default;
};

struct LoadIterations {
  uint64_t passed = 0, failed = 0, dropped = 0, interrupted = 0;
  bool operator==(const LoadIterations&) const = default;
};

// Held connections and WebSockets: `closed` counts those the server closed or that were
// lost, and close_codes the codes they closed with ("1006": no close frame came).
struct LoadConnections {
  uint64_t open = 0, max = 0, opened = 0, failed = 0, closed = 0;
  std::map<std::string, uint64_t> close_codes;
  bool operator==(const LoadConnections&) const = default;
};

// WebSocket messages, over the whole test.
struct LoadMessages {
  uint64_t sent = 0, received = 0;
  double sent_per_s = 0, received_per_s = 0;
  bool operator==(const LoadMessages&) const = default;
};

struct LoadTls {
  uint64_t handshakes = 0, full = 0, resumed = 0;
  Latency handshake;
  bool operator==(const LoadTls&) const = default;
};

// Requests answered over each protocol ("HTTP/1.1", "HTTP/2" in JSON).
struct LoadProtocols {
  uint64_t http1 = 0, http2 = 0;
  bool operator==(const LoadProtocols&) const = default;
};

// corral's own lateness in starting iterations on schedule.
struct StartLateness {
  Latency late;
  uint64_t over_5ms = 0;
  bool operator==(const StartLateness&) const = default;
};

struct LoadStepTotals {
  uint32_t index = 0;
  std::string name;
  uint64_t requests = 0;
  LoadErrors errors;
  Latency latency, latency_raw;
  bool operator==(const LoadStepTotals&) const = default;
};

struct ThresholdOutcome {
  std::string name;  // as written in the scenario: "latency p99 < 300ms"
  double value = 0;  // latency in ms, rates as fractions
  bool ok = false;
  bool operator==(const ThresholdOutcome&) const = default;
};

// Something that happened during a test, at `t` seconds into it: "stage" (a stage began),
// "threshold" (a threshold was first crossed), "aborted" (abort_on_fail, or the target died),
// "stopped" (a request, or the daemon stopping), "target" (the target died, or a stop_when held).
// Reports draw them as labelled vertical lines over their charts.
struct LoadEvent {
  double t = 0;
  std::string kind;
  std::string text;
  bool operator==(const LoadEvent&) const = default;
};

// One of the test's slowest requests (at most 10, the slowest first): the second it was in, its
// step, its latency from the iteration's intended start, its status (0: none) and outcome
// ("ok", "status", "transport", "timeout"), and the trace id its traceparent carried.
struct LoadSlowRequest {
  double t = 0;
  uint32_t step = 0;
  std::string step_name;
  double ms = 0;
  int64_t status = 0;
  std::string outcome;
  std::string trace_id;
  bool operator==(const LoadSlowRequest&) const = default;
};

// A line of the output of a target corral started.
struct TargetLine {
  std::string stream;  // "stdout" or "stderr"
  std::string text;
  bool operator==(const TargetLine&) const = default;
};

// A target corral started for the test (a load section's "target").
struct LoadTargetProcess {
  std::vector<std::string> cmd;
  // "starting" (until ready), "running", "died" (ended by itself while the test ran),
  // "stopped" (ended by corral after the test)
  std::string state;
  std::optional<int64_t> exit_code;   // when it exited
  std::optional<std::string> signal;  // when a signal ended it: "SIGABRT"
  std::optional<double> ended_s;      // seconds into the test when it ended
  uint64_t rss_peak = 0;              // the most it held resident, bytes
  std::optional<std::string> cause;   // its last line saying it ran out of memory, if one did
  std::vector<TargetLine> lines;      // its last lines of output, oldest first
  bool operator==(const LoadTargetProcess&) const = default;
};

// The watched target (a load section's "watch", or the target it started).
struct LoadTarget {
  std::optional<int64_t> pid;
  std::optional<std::string> url;
  nlohmann::json last;  // its last sample (keys from the target's metrics), null before one
  double rss_max = 0;
  double cpu_max = 0;
  nlohmann::json event;   // what it did (died, crossed a condition), null when nothing
  nlohmann::json series;  // every sample, with ?series=1 only
  std::optional<LoadTargetProcess> process;
  bool operator==(const LoadTarget&) const = default;
};

struct LoadClusterHost {
  std::string host;
  int64_t share = 0;
  std::string state;
  bool taking_part = false;
  bool operator==(const LoadClusterHost&) const = default;
};

// A test spread over hosts: this host's share and, on the origin, the others'.
struct LoadCluster {
  int64_t hosts = 0;
  int64_t share = 0;
  std::optional<std::string> origin;
  std::vector<LoadClusterHost> others;
  bool operator==(const LoadCluster&) const = default;
};

struct LoadAnswer {
  std::string id, name, state, reason, model;
  nlohmann::json load;  // the load section as given (config/load reads it)
  std::string created;  // ISO 8601, UTC
  std::optional<std::string> ended;
  double duration_s = 0, elapsed_s = 0;
  int64_t workers = 0;
  uint64_t vus = 0, vus_max = 0, requests = 0, bytes = 0;
  double rps = 0;
  LoadIterations iterations;
  LoadErrors errors;
  LoadConnections connections;
  LoadMessages messages;
  LoadTls tls;
  LoadProtocols protocols;
  bool corrected = false;  // latency counted from each iteration's intended start
  Latency latency, latency_raw;
  StartLateness start_lateness;
  std::vector<LoadStepTotals> steps;
  std::vector<ThresholdOutcome> thresholds;
  std::map<std::string, uint64_t> reasons;  // why iterations failed, with counts
  // The trace id of an iteration that failed for the reason (of reasons whose iterations
  // carried a traceparent).
  std::map<std::string, std::string> reason_traces;
  std::vector<LoadEvent> events;            // by time
  std::vector<LoadSlowRequest> slowest;     // the slowest first
  std::optional<LoadTarget> target;
  std::optional<LoadCluster> cluster;
  nlohmann::json series;  // one object per second, with ?series=1 only; else null
  bool operator==(const LoadAnswer&) const = default;
};

nlohmann::json to_json(const Latency& l);
nlohmann::json to_json(const LoadErrors& e);
nlohmann::json to_json(const LoadAnswer& a);

// GET /loads/<id>.
Result<LoadAnswer> load_from_json(const nlohmann::json& j);
// GET /loads: {"loads": [...]}.
Result<std::vector<LoadAnswer>> loads_from_json(const nlohmann::json& answer);

}  // namespace corral::api
