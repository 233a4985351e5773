// The scenario model: a parsed, validated scenario file.
//
// parse_scenario() (config/scenario/parse.h) builds it; afterwards it is immutable and shared
// by every instance of a run as std::shared_ptr<const Scenario>, from any thread. Every
// template, pointer and pattern in it was checked and compiled at parse time, so running a
// step needs no further validation. The file format is described in docs/scenarios.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/limits.h"
#include "config/scenario/capture.h"
#include "config/scenario/condition.h"
#include "config/scenario/step_kind.h"
#include "config/scenario/template.h"
#include "shared/http/tls_options.h"

namespace corral::scenario {

struct RequestSpec {
  std::string method = "GET";  // upper case: GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS
  Template url;
  // In file order. A `json` body without a Content-Type header gets
  // "Content-Type: application/json" added here by the parser.
  std::vector<std::pair<std::string, Template>> headers;
  std::optional<JsonTemplate> json;  // "json": sent as its compact JSON text
  std::optional<Template> body;      // "body": sent as the text; at most one of json/body is set
  uint64_t timeout_ms = 30000;       // one try, connect to last byte (and every redirect)
  bool follow_redirects = true;      // 301, 302, 303, 307, 308 with a Location
  int max_redirects = 10;            // hops followed before "too many redirects"
  uint64_t max_response_bytes = 0;   // a larger body is a transport error; 0 = the daemon's
  // "tls" and "http_version" of this request; unset fields take the scenario's, then the
  // daemon's (shared/http/tls_options.h).
  std::optional<http::TlsOptions> tls;
  std::optional<http::HttpVersion> http_version;
};

// Which failures of one try make `Retry` try again.
struct RetryOn {
  bool transport = true;      // connect/timeout/reset: no response at all
  bool server_error = true;   // 5xx
  bool client_error = false;  // 4xx
  bool expect = false;        // a response that fails `expect`
  bool operator==(const RetryOn&) const = default;
};

// Retrying a failed request: not polling. Try n (n >= 2) starts
// min(initial_interval * backoff^(n-2), max_interval) after try n-1 failed, times the jitter
// factor (worker/engine/jitter.h).
struct Retry {
  int attempts = 1;  // counts the first try: 1 = no retry
  uint64_t initial_interval_ms = 1000;
  double backoff_factor = 2.0;
  uint64_t max_interval_ms = 30000;
  RetryOn on;
  double jitter = 0;  // each wait is scaled by a factor in [1 - jitter, 1 + jitter]
  // Statuses never tried again, whatever `on` says: a 501 among the 5xx, a 409 among the 4xx.
  std::vector<int> non_retryable;
};

// A kind's own fields (steps/<kind>/<kind>.h derives its spec from this): what no other kind
// shares. Immutable once parsed.
struct KindSpec {
  virtual ~KindSpec() = default;
};

// One step of a scenario. Its kind (config/scenario/step_kind.h) reads the fields only it has
// into `spec`; the fields several kinds share are here, read by the parser for every kind that
// takes them.
struct Step {
  std::string name;  // from the file, else e.g. "GET {{base}}/jobs/{{job}}" or "sleep 2s"
  size_t index = 0;  // position in Scenario::steps
  // One past the last step of the list this step is in: the step after this one is index + 1
  // unless that is list_end, where the list (the scenario, or a parallel step's branch) ends.
  size_t list_end = 0;
  // A step that runs lists of steps (parallel): each list, a branch, by name and first step
  // (its others follow it, to that step's list_end). Empty for the other kinds.
  struct Branch {
    std::string name;  // its captures are "<name>.<capture>" after the join
    size_t first = 0;
  };
  std::vector<Branch> branches;
  // The branch the step is in, as `corral show` names it: "" for the scenario's own steps,
  // "fan out/eu" for one in branch "eu" of the parallel step "fan out".
  std::string branch;
  const StepKind* kind = nullptr;        // never null in a parsed scenario
  std::shared_ptr<const KindSpec> spec;  // the kind's own fields; null for a kind without any
  RequestSpec request;            // kinds that send a request (request, poll); a ws step's "tls"
  std::vector<Condition> expect;  // all must hold, else the step fails
  // Checked first on every response; one holding fails the step (and the instance) at once,
  // with no retry and no further attempt.
  std::vector<Condition> abort_if;
  std::vector<Capture> captures;  // set after the step passes
  Retry retry;                    // each try of the step's request
  // How often the step sends its request while it waits for something (a poll's `every`);
  // 0 for a step that does not repeat. The default start_spread is read from it.
  uint64_t repeat_ms = 0;
  // The step's limit, counted from its first attempt: every try and every wait between them;
  // 0 = none. Its kind sets it (a request's "timeout", a poll's "poll.timeout").
  uint64_t limit_ms = 0;
  // True when a condition or capture reads the body as JSON: the engine need not parse
  // response bodies of the other steps.
  bool reads_json = false;
  // True for a step that sets variables besides its captures (a parallel step: its branches').
  bool exports = false;
  // Where an instance whose checkpoint is at this step resumes, when that checkpoint comes
  // from elsewhere (another worker, the journal): an earlier step whose work could not move
  // with it and that this step needs (the "ws" step whose socket it uses). Unset: this step.
  std::optional<size_t> resume_at;

  // Whether passing the step may change the instance's variables.
  bool sets_vars() const { return exports || !captures.empty(); }

  // The kind's spec as its type; only the kind's own code asks, and knows the type.
  template <typename T>
  const T& spec_as() const {
    return static_cast<const T&>(*spec);
  }
};

struct Scenario {
  std::string name;
  nlohmann::json vars = nlohmann::json::object();  // defaults; run-time vars override them
  // Every step, flat: the scenario's own steps first, [0, top_steps()), then the steps of
  // parallel steps' branches, each branch's steps in a row (steps/parallel). Not empty.
  std::vector<Step> steps;
  std::optional<uint64_t> start_spread_ms;  // "start_spread"; unset: start_spread_ms() decides
  config::TargetLimits limits;  // "limits": per origin, for this run's requests (config/limits.h)
  http::TlsOptions tls;         // "tls": every request's, under its own
  std::optional<http::HttpVersion> http_version;  // "http_version": every request's
  // "trace_context": every request carries a W3C traceparent header (shared/trace_context.h)
  bool trace_context = true;
  // "otlp_endpoint": where the spans of its requests go, over OTLP/HTTP with JSON encoding
  // (worker/otlp/span_exporter.h); an http(s) URL. Empty: nowhere.
  std::string otlp_endpoint;
  nlohmann::json source;  // the document as submitted, to forward or show it

  // How many steps the scenario's own list has: an instance passes after step top_steps() - 1.
  size_t top_steps() const { return steps.front().list_end; }
};

// The names of the steps whose requests do not verify the server's certificate (tls.verify
// false in the request, the scenario or `base`, the daemon's default).
std::vector<std::string> unverified_steps(const Scenario& s, const http::TlsOptions& base);

// The scenario's `limits` for a run with run-time vars `run_vars`: each origin written as a
// template ("{{base}}") expanded with them over the scenario's vars, and reduced to its origin.
// Fails naming the key whose expansion is no http(s) URL, or that names an origin twice.
Result<config::TargetLimits> run_limits(const Scenario& s, const nlohmann::json& run_vars);

// Runs this large or larger spread their starts by default.
constexpr uint32_t kSpreadFromInstances = 1000;
constexpr uint64_t kMaxDefaultSpreadMs = 60000;

// The window over which a run of `instances` starts its instances' first steps, evenly: the
// scenario's "start_spread", else, for a run of kSpreadFromInstances or more, the `every` of its
// first poll (at most a minute), so that its polls do not arrive as one wave; else 0.
inline uint64_t start_spread_ms(const Scenario& s, uint32_t instances) {
  if (s.start_spread_ms) return *s.start_spread_ms;
  if (instances < kSpreadFromInstances) return 0;
  for (const Step& step : s.steps) {
    if (step.repeat_ms != 0) return std::min(step.repeat_ms, kMaxDefaultSpreadMs);
  }
  return 0;
}

}  // namespace corral::scenario
