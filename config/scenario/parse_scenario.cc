// Parsing a scenario document and its steps. The request, conditions and captures are read in
// parse_request.cc and parse_condition.cc; the field readers are in parse_fields.cc.
#include <algorithm>

#include "config/scenario/parse.h"
#include "config/scenario/parse_internal.h"

namespace corral::scenario {
namespace detail {
namespace {

struct RetryOnName {
  std::string_view name;
  bool RetryOn::*flag;
};
constexpr RetryOnName kRetryOn[] = {
    {"transport", &RetryOn::transport},
    {"5xx", &RetryOn::server_error},
    {"4xx", &RetryOn::client_error},
    {"expect", &RetryOn::expect},
};

RetryOn read_retry_on(const json& j, const std::string& path) {
  if (!j.is_array() || j.empty()) fail(path, "expected a non-empty array");
  RetryOn on{false, false, false, false};
  for (size_t i = 0; i < j.size(); ++i) {
    auto it = std::find_if(std::begin(kRetryOn), std::end(kRetryOn),
                           [&](const RetryOnName& r) { return j[i] == r.name; });
    if (it == std::end(kRetryOn)) {
      fail(element_path(path, i),
           "expected one of transport, 5xx, 4xx, expect, got " + shown(j[i]));
    }
    on.*(it->flag) = true;
  }
  return on;
}

std::vector<int> read_statuses(const json& j, const std::string& path) {
  if (!j.is_array() || j.empty()) fail(path, "expected a non-empty array of HTTP statuses");
  std::vector<int> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(read_int(j[i], element_path(path, i), 100, 599));
  return out;
}

Retry parse_retry(const json& j, const std::string& path) {
  check_fields(j, path, {"attempts", "initial_interval", "backoff", "max_interval", "on",
                         "non_retryable", "jitter"});
  Retry r;
  auto at = [&](std::string_view name) { return field_path(path, name); };
  if (j.contains("attempts")) r.attempts = read_int(j["attempts"], at("attempts"), 1, 100);
  if (j.contains("initial_interval")) {
    r.initial_interval_ms = read_duration(j["initial_interval"], at("initial_interval"));
  }
  if (j.contains("backoff")) r.backoff_factor = read_number(j["backoff"], at("backoff"), 1, 10);
  if (j.contains("max_interval")) {
    r.max_interval_ms = read_duration(j["max_interval"], at("max_interval"));
    if (r.max_interval_ms < r.initial_interval_ms) {
      fail(at("max_interval"), "must not be shorter than initial_interval");
    }
  }
  r.max_interval_ms = std::max(r.max_interval_ms, r.initial_interval_ms);
  if (j.contains("on")) r.on = read_retry_on(j["on"], at("on"));
  if (j.contains("jitter")) r.jitter = read_number(j["jitter"], at("jitter"), 0, 1);
  if (j.contains("non_retryable")) {
    r.non_retryable = read_statuses(j["non_retryable"], at("non_retryable"));
  }
  return r;
}

Poll parse_poll(const json& j, const std::string& path) {
  check_fields(j, path, {"every", "timeout", "until", "fail_if", "max_attempts", "backoff",
                         "max_interval", "jitter"});
  Poll p;
  auto at = [&](std::string_view name) { return field_path(path, name); };
  p.every_ms =
      read_positive_duration(required(j, path, "every", "a duration like \"10s\""), at("every"));
  if (j.contains("timeout")) p.timeout_ms = read_positive_duration(j["timeout"], at("timeout"));
  p.until = parse_conditions(required(j, path, "until", "a condition or an array of conditions"),
                             at("until"), true);
  if (j.contains("fail_if")) p.fail_if = parse_conditions(j["fail_if"], at("fail_if"), false);
  if (j.contains("max_attempts")) {
    p.max_attempts = read_int(j["max_attempts"], at("max_attempts"), 1, 1000000);
  }
  if (p.timeout_ms == 0 && p.max_attempts == 0) {
    fail(path, "a poll needs a \"timeout\" or \"max_attempts\", or it may never end");
  }
  if (j.contains("backoff")) p.backoff_factor = read_number(j["backoff"], at("backoff"), 1, 10);
  if (j.contains("jitter")) p.jitter = read_number(j["jitter"], at("jitter"), 0, 1);
  if (j.contains("max_interval")) {
    p.max_interval_ms = read_positive_duration(j["max_interval"], at("max_interval"));
    if (p.max_interval_ms < p.every_ms) fail(at("max_interval"), "must not be shorter than every");
  }
  return p;
}

// Which kind the step's fields make it, checking that they go together.
StepKind step_kind(const json& j, const std::string& path) {
  bool request = j.contains("request"), sleep = j.contains("sleep"), poll = j.contains("poll");
  if (poll && !request && !sleep) {
    fail(field_path(path, "poll"), "a poll needs a \"request\" to repeat");
  }
  if (request == sleep) fail(path, "a step needs exactly one of \"request\", \"sleep\"");
  if (sleep) {
    for (std::string_view f : {"expect", "capture", "retry", "poll", "timeout", "abort_if"}) {
      if (j.contains(f)) {
        fail(field_path(path, f),
             "a \"sleep\" step takes only \"name\", \"sleep\" and \"jitter\"");
      }
    }
    return StepKind::kSleep;
  }
  if (j.contains("jitter")) {
    fail(field_path(path, "jitter"),
         "a step's \"jitter\" is for \"sleep\"; a poll's goes in \"poll\", a retry's in \"retry\"");
  }
  if (poll && j.contains("expect")) {
    fail(field_path(path, "expect"),
         "a poll step checks responses with \"until\" and \"fail_if\", not \"expect\"");
  }
  return poll ? StepKind::kPoll : StepKind::kRequest;
}

bool any_json(const std::vector<Condition>& conditions) {
  return std::any_of(conditions.begin(), conditions.end(),
                     [](const Condition& c) { return c.subject == Subject::kJson; });
}

bool reads_json(const Step& s) {
  bool captures = std::any_of(s.captures.begin(), s.captures.end(),
                              [](const Capture& c) { return c.source == Capture::Source::kJson; });
  return captures || any_json(s.expect) || any_json(s.abort_if) || any_json(s.poll.until) ||
         any_json(s.poll.fail_if);
}

// Reads step `index`; adds the variables it captures to `scope` for the steps after it.
Step parse_step(const json& j, size_t index, Scope& scope) {
  std::string path = element_path("steps", index);
  check_fields(j, path,
               {"name", "request", "expect", "capture", "retry", "poll", "sleep", "timeout",
                "abort_if", "jitter"});
  auto at = [&](std::string_view name) { return field_path(path, name); };
  Step s;
  s.index = index;
  s.kind = step_kind(j, path);
  if (s.kind == StepKind::kSleep) {
    s.sleep_ms = read_duration(j["sleep"], at("sleep"));
    if (j.contains("jitter")) s.sleep_jitter = read_number(j["jitter"], at("jitter"), 0, 1);
    s.name = "sleep " + (j["sleep"].get<std::string>());
  } else {
    s.request = parse_request(j["request"], at("request"), scope);
    s.name = s.request.method + " " + s.request.url.source();
  }
  if (j.contains("name")) s.name = read_string(j["name"], at("name"));
  if (j.contains("expect")) s.expect = parse_conditions(j["expect"], at("expect"), false);
  if (j.contains("abort_if")) s.abort_if = parse_conditions(j["abort_if"], at("abort_if"), false);
  if (j.contains("retry")) s.retry = parse_retry(j["retry"], at("retry"));
  if (s.kind == StepKind::kPoll) s.poll = parse_poll(j["poll"], at("poll"));
  if (j.contains("timeout")) {
    // (A sleep step with a timeout was refused by step_kind().)
    if (s.kind == StepKind::kPoll) {
      fail(at("timeout"), "a poll step's limit is \"poll\": {\"timeout\": ...}");
    }
    s.timeout_ms = read_positive_duration(j["timeout"], at("timeout"));
  }
  if (j.contains("capture")) s.captures = parse_captures(j["capture"], at("capture"));
  for (const Capture& c : s.captures) scope.insert(c.name);
  s.reads_json = reads_json(s);
  return s;
}

nlohmann::json parse_vars(const json& doc, Scope& scope) {
  if (!doc.contains("vars")) return json::object();
  const json& vars = doc["vars"];
  if (!vars.is_object()) fail("vars", "expected an object");
  for (const auto& [name, value] : vars.items()) {
    scope.insert(check_variable_name(name, field_path("vars", name)));
  }
  return vars;
}

std::shared_ptr<const Scenario> parse_document(const json& doc, const ParseOptions& options) {
  if (!doc.is_object()) fail("", "expected a scenario: a JSON object with \"name\" and \"steps\"");
  check_nesting(doc);
  // "load" is read by `corral load` (config/load/parse.h); a run ignores it.
  check_fields(doc, "", {"name", "vars", "steps", "load"});
  auto scenario = std::make_shared<Scenario>();
  scenario->name = read_string(required(doc, "", "name", "a string"), "name");
  Scope scope{{options.extra_vars.begin(), options.extra_vars.end()}, &options};
  scenario->vars = parse_vars(doc, scope);
  const json& steps = required(doc, "", "steps", "a non-empty array");
  if (!steps.is_array() || steps.empty()) fail("steps", "expected a non-empty array");
  for (size_t i = 0; i < steps.size(); ++i) {
    scenario->steps.push_back(parse_step(steps[i], i, scope));
  }
  scenario->source = doc;
  return scenario;
}

}  // namespace
}  // namespace detail

std::string_view to_string(StepKind kind) {
  switch (kind) {
    case StepKind::kRequest:
      return "request";
    case StepKind::kPoll:
      return "poll";
    case StepKind::kSleep:
      return "sleep";
  }
  return "?";
}

Result<std::shared_ptr<const Scenario>> parse_scenario(const nlohmann::json& doc,
                                                       const std::set<std::string>& extra_vars) {
  ParseOptions options;
  options.extra_vars = extra_vars;
  return parse_scenario(doc, options);
}

Result<std::shared_ptr<const Scenario>> parse_scenario(const nlohmann::json& doc,
                                                       const ParseOptions& options) {
  try {
    return detail::parse_document(doc, options);
  } catch (const detail::ParseError& e) {
    return invalid_argument(e.message);
  } catch (const nlohmann::json::exception& e) {
    // A check above let a wrong type through: still an invalid scenario, never a crash.
    return invalid_argument(std::string("invalid scenario: ") + e.what());
  }
}

}  // namespace corral::scenario
