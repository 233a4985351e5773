// The load model: how `corral load` runs a scenario as a stream of iterations.
//
// A scenario file's "load" section (or the command line's flags, which override it) says how
// many iterations run and when; parse_load() (config/load/parse.h) builds this from it. The
// format and the meaning of each model are described in docs/load.md. Immutable once parsed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corral::load {

// Closed: handle every kind in a switch without `default` (-Werror=switch checks it).
enum class Model {
  kClosed,  // a number of virtual users, each looping the scenario
  kOpen,    // iterations started at a rate, each on a free VU, else dropped
  kHeld,    // one keep-alive connection per VU for the whole test, an iteration every `pace`
};
std::string_view to_string(Model model);

// One stage: over `duration_ms`, the target moves linearly from the previous stage's target
// (the first from LoadSpec::start) to `target`. The target counts VUs (closed), iterations per
// second (open) or connections (held).
struct Stage {
  uint64_t duration_ms = 0;
  double target = 0;
};

// What a threshold measures. Closed: see Model.
enum class Metric {
  kLatency,     // per request, from the intended start where a schedule exists
  kLatencyRaw,  // per request, from when it was sent
  kErrors,      // failed requests
  kDropped,     // iterations that could not start on time (open model)
  kRps,         // requests per second over the whole test
  kIterations,  // iterations completed
  kWsLatency,   // per message a ws_receive step matched, from the send before it
  kWsErrors,    // failed operations of the WebSocket steps (openings, sends, receives)
};
std::string_view to_string(Metric metric);
// Whether the metric is a latency (measured in microseconds, aggregated as p99, max, ...).
bool is_latency(Metric metric);
// Whether the metric counts failures (aggregated as a rate or a count).
bool is_errors(Metric metric);

enum class Aggregate { kPercentile, kMin, kMax, kMean, kRate, kCount, kValue };
enum class Op { kLess, kLessEqual, kGreater, kGreaterEqual };
// Whether `value op bound`.
bool compare(double value, Op op, double bound);

// `"latency{step:login}": ["p99 < 200ms"]` is one threshold: crossed when the test's value
// does not satisfy `aggregate op bound`.
struct Threshold {
  std::string name;  // as written: `latency{step:login}: p99 < 200ms`
  Metric metric = Metric::kLatency;
  std::string step;  // {step:NAME}; empty: every step
  Aggregate aggregate = Aggregate::kValue;
  double percentile = 0;  // kPercentile: 0 < percentile <= 100
  Op op = Op::kLess;
  // Microseconds for latencies, a fraction (0.01 for "1%") for rates, a count, or requests per
  // second for rps.
  double bound = 0;
  bool abort_on_fail = false;  // stop the test when crossed
  uint64_t delay_ms = 0;       // ... but not before this long into it

  // Whether `value` (in the unit of `bound`) satisfies the threshold.
  bool holds(double value) const;
};

// `"stop_when": ["target.rss > 1.2GB"]`: the test stops once a watched value of the target
// satisfies `op bound`.
struct StopWhen {
  std::string name;    // as written
  std::string metric;  // "rss", "cpu", "fds", "threads", or a series scraped from Watch::url
  Op op = Op::kGreater;
  double bound = 0;  // bytes when written with a unit (1.2GB), else as written

  bool holds(double value) const;
};

// The target watched while the test runs (docs/load.md, "Watching the target"): a process on
// this machine, read from /proc every second, and a metrics URL (Prometheus text or a JSON
// object) scraped every second.
struct Watch {
  int64_t pid = 0;                  // 0: none
  std::string url;                  // empty: none
  std::vector<std::string> series;  // from the URL: the series kept (stop_when's included)
  std::vector<StopWhen> stop_when;

  bool any() const { return pid != 0 || !url.empty(); }
};

// "target": the server under test, started by corral on the daemon's host for the test
// (docs/load.md, "The target under corral"): in a process group of its own, ready once its
// check passes, watched as "watch" would watch its pid, and stopped at the end.
struct TargetCommand {
  enum class Ready {
    kStarted,  // no check: ready once started
    kUrl,      // a GET of `url` answers 2xx
    kLog,      // a line of its stdout or stderr matches `log` (RE2, anywhere in the line)
    kPort,     // 127.0.0.1:`port` accepts a connection
  };
  std::vector<std::string> cmd;  // argv, run as written (argv[0] from PATH); empty: none
  std::string cwd;               // empty: the daemon's
  std::vector<std::pair<std::string, std::string>> env;  // added to the daemon's environment
  Ready ready = Ready::kStarted;
  std::string url, log;
  uint16_t port = 0;
  uint64_t ready_timeout_ms = 10000;
  uint64_t stop_grace_ms = 5000;  // from SIGTERM to SIGKILL at the end

  bool any() const { return !cmd.empty(); }
};

struct LoadSpec {
  Model model = Model::kClosed;
  double start = 0;  // the target before the first stage (constant models: the target itself)
  std::vector<Stage> stages;  // not empty
  uint64_t pace_ms = 0;       // closed and held: a VU starts an iteration every pace; 0 = at once
  uint64_t think_ms = 0;      // a pause between two steps of an iteration
  uint64_t max_vus = 0;       // open: VUs that may run iterations at once
  uint64_t grace_ms = 30000;  // how long iterations in progress may finish at the end
  std::vector<std::string> source_addresses;  // held: local addresses to connect from
  std::vector<Threshold> thresholds;
  Watch watch;
  TargetCommand target;
  // The hosts of a cluster to spread the test over (docs/cluster.md); 0: every live host.
  uint32_t hosts = 1;

  uint64_t duration_ms() const;
  // The target at `t_ms` from the start: piecewise linear over the stages; after the last
  // stage, its target.
  double target_at(uint64_t t_ms) const;
  // The largest target of any stage: the VUs or connections to provide for.
  double peak() const;
};

}  // namespace corral::load
