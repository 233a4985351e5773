// The scenario model: a parsed, validated scenario file.
//
// parse_scenario() (config/scenario/parse.h) builds it; afterwards it is immutable and shared
// by every instance of a run as std::shared_ptr<const Scenario>, from any thread. Every
// template, pointer and pattern in it was checked and compiled at parse time, so running a
// step needs no further validation. The file format is described in docs/scenarios.md.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/scenario/capture.h"
#include "config/scenario/condition.h"
#include "config/scenario/template.h"

namespace corral::scenario {

// Closed: handle every kind in a switch without `default` (-Werror=switch checks it).
enum class StepKind { kRequest, kPoll, kSleep };
std::string_view to_string(StepKind kind);

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

// Repeating a request until a condition holds. After each response: if any `fail_if`
// holds the step fails; else if all of `until` hold it passes (captures are taken from that
// response); else the next attempt starts `interval` later, where the interval is `every_ms`
// times backoff_factor^(attempt-1), capped by max_interval_ms. The step fails when
// `timeout_ms` has passed since the first attempt started or after `max_attempts` attempts.
// The parser guarantees at least one of timeout_ms and max_attempts is set.
struct Poll {
  uint64_t every_ms = 0;           // > 0
  uint64_t timeout_ms = 0;         // 0 = no time limit
  std::vector<Condition> until;    // not empty; all must hold
  std::vector<Condition> fail_if;  // any one holding fails the step
  int max_attempts = 0;            // 0 = unlimited
  double backoff_factor = 1.0;     // 1 = a fixed interval
  uint64_t max_interval_ms = 0;    // 0 = no cap
  double jitter = 0;               // each interval is scaled by a factor in [1 - jitter, 1 + jitter]
};

struct Step {
  std::string name;  // from the file, else e.g. "GET {{base}}/jobs/{{job}}" or "sleep 2s"
  size_t index = 0;  // position in Scenario::steps
  StepKind kind = StepKind::kRequest;
  RequestSpec request;            // kRequest, kPoll
  std::vector<Condition> expect;  // kRequest: all must hold, else the step fails
  // kRequest, kPoll: checked first on every response; one holding fails the step (and the
  // instance) at once, with no retry and no further poll.
  std::vector<Condition> abort_if;
  std::vector<Capture> captures;  // kRequest, kPoll: set after the step passes
  Retry retry;                    // kRequest, kPoll (each poll attempt's request)
  Poll poll;                      // kPoll
  // kRequest: the whole step's limit, every try and every wait between tries, counted from
  // the first try; 0 = none. (A poll step's limit is poll.timeout_ms.)
  uint64_t timeout_ms = 0;
  uint64_t sleep_ms = 0;  // kSleep
  double sleep_jitter = 0;  // kSleep: the sleep is scaled by a factor in [1 - jitter, 1 + jitter]
  // True when a condition or capture reads the body as JSON: the engine need not parse
  // response bodies of the other steps.
  bool reads_json = false;
};

// The limit a step has, counted from its first attempt: a poll's timeout, or a request step's
// timeout; 0 = none.
inline uint64_t step_limit_ms(const Step& s) {
  switch (s.kind) {
    case StepKind::kPoll:
      return s.poll.timeout_ms;
    case StepKind::kRequest:
      return s.timeout_ms;
    case StepKind::kSleep:
      return 0;
  }
  return 0;
}

struct Scenario {
  std::string name;
  nlohmann::json vars = nlohmann::json::object();  // defaults; run-time vars override them
  std::vector<Step> steps;                         // not empty
  nlohmann::json source;  // the document as submitted, to forward or show it
};

}  // namespace corral::scenario
