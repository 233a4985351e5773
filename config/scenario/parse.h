// Parsing and validating a scenario file.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "config/scenario/model.h"
#include "shared/status.h"

namespace corral::scenario {

// What a submission is checked against besides the document itself.
struct ParseOptions {
  std::set<std::string> extra_vars;  // the run-time vars given at submission
  // When set, every `{{env.NAME}}` must name a variable for which this returns true, and
  // every `{{secret.NAME}}` a secret for which `has_secret` does. Unset, they are not checked:
  // a worker re-parsing a run, or a journal restore, must not refuse a run the master took
  // (the instance fails at run time instead, naming what is missing).
  std::function<bool(const std::string&)> has_env;
  std::function<bool(const std::string&)> has_secret;
  // When set, the files a "tls" object names must be readable, and a client key readable by
  // its owner only: what the workers would refuse is said at submission.
  bool check_files = false;
};

// How deeply a scenario may nest arrays and objects (the document itself is level 1). Copying,
// printing and comparing JSON recurse once per level, so a deeper document could overflow the
// stack of the process that parses it (the master, on a POST /runs of at most 1 MiB).
constexpr size_t kMaxNesting = 64;

// Builds the model from a scenario document, checking everything before anything runs:
// nesting (before any recursive step: `steps[0].request.json.a: nested deeper than 64 levels`),
// field names and types, durations, methods, JSON Pointers, regular expressions, and that
// every template variable is defined — in "vars", captured by an earlier step, a built-in, or
// named in `extra_vars` (the run-time vars given at submission).
//
// Errors are kInvalidArgument; the message starts with the path of the field at fault:
//   `steps[1].poll.every: expected a duration like "10s", got 10`
//   `steps[3].request.url: unknown variable "jobb" in "{{base}}/jobs/{{jobb}}"`
//   `steps[0].request.headers.Authorization: environment variable "TOKEN" is not set`
// `{{env.CORRAL_SECRET_X}}` is refused: a secret is used as `{{secret.X}}`, which masks it.
// Pure: no I/O beyond the options' callbacks. Call it from any thread.
Result<std::shared_ptr<const Scenario>> parse_scenario(const nlohmann::json& doc,
                                                       const ParseOptions& options);
Result<std::shared_ptr<const Scenario>> parse_scenario(
    const nlohmann::json& doc, const std::set<std::string>& extra_vars = {});

}  // namespace corral::scenario
