// Parsing a scenario document and its steps. Each step's kind (config/scenario/step_kind.h,
// steps/<kind>/parse.cc) reads its own fields; the fields kinds share (expect, abort_if, retry,
// capture) are read here. The request, conditions and captures are read in parse_request.cc and
// parse_condition.cc; the field readers are in parse_fields.cc.
#include <algorithm>

#include "config/fields.h"
#include "config/scenario/parse.h"
#include "config/scenario/parse_internal.h"
#include "shared/http/origin.h"

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
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(read_int(j[i], element_path(path, i), 100, 599));
  return out;
}

Retry parse_retry(const json& j, const std::string& path) {
  check_fields(
      j, path,
      {"attempts", "initial_interval", "backoff", "max_interval", "on", "non_retryable", "jitter"});
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

// Every field a step of any kind takes ("name" first).
std::vector<std::string_view> every_step_field() {
  std::vector<std::string_view> every{"name"};
  for (const StepKind* k : step_kinds()) {
    for (std::string_view f : k->fields) {
      if (std::find(every.begin(), every.end(), f) == every.end()) every.push_back(f);
    }
    if (std::find(every.begin(), every.end(), k->mark) == every.end()) every.push_back(k->mark);
  }
  return every;
}

// A step without the mark of any kind: the key that should have been one is named. A key
// nearest to a mark ("reqest") or close to no step field at all ("teleport") is an unknown
// step kind; one nearest to another field ("expct") is a misspelt field; a step of known fields
// only lacks its kind.
[[noreturn]] void no_kind(const json& j, const std::string& path) {
  std::vector<std::string_view> marks;
  std::string list;
  for (const StepKind* k : step_kinds()) {
    marks.push_back(k->mark);
    list += (list.empty() ? "\"" : ", \"") + std::string(k->mark) + "\"";
  }
  const std::vector<std::string_view> fields = every_step_field();
  auto known = [&](const std::string& key) {
    return std::find(fields.begin(), fields.end(), key) != fields.end();
  };
  auto unknown_kind = [&](const std::string& key) {
    fail(field_path(path, key), "unknown step kind \"" + key + "\"" + did_you_mean(key, marks) +
                                    " (kinds: " + list + ")");
  };
  auto nearest_is_mark = [&](const std::string& key) {
    const std::string_view* near = config::closest_name(key, fields);
    return near != nullptr && std::find(marks.begin(), marks.end(), *near) != marks.end();
  };
  for (const auto& [key, value] : j.items()) {
    if (!known(key) && nearest_is_mark(key)) unknown_kind(key);
  }
  for (const auto& [key, value] : j.items()) {
    if (known(key)) continue;
    if (config::closest_name(key, fields) != nullptr) check_fields(j, path, fields);
    unknown_kind(key);
  }
  fail(path, "a step needs exactly one of " + list);
}

// The kind whose mark step `j` holds; when it holds the marks of two kinds, the one that takes
// the other's mark among its fields (a poll step holds a "request").
const StepKind& kind_of(const json& j, const std::string& path) {
  if (!j.is_object()) fail(path, "expected an object");
  std::vector<const StepKind*> all = step_kinds(), marked;
  for (const StepKind* k : all) {
    if (j.contains(k->mark)) marked.push_back(k);
  }
  auto takes = [](const StepKind* k, std::string_view field) {
    return std::find(k->fields.begin(), k->fields.end(), field) != k->fields.end();
  };
  std::erase_if(marked, [&](const StepKind* k) {
    return std::any_of(marked.begin(), marked.end(),
                       [&](const StepKind* o) { return o != k && takes(o, k->mark); });
  });
  if (marked.size() == 1) return *marked.front();
  if (marked.empty()) no_kind(j, path);
  std::string marks;
  for (const StepKind* k : all)
    marks += (marks.empty() ? "\"" : ", \"") + std::string(k->mark) + "\"";
  fail(path, "a step needs exactly one of " + marks);
}

// Fails on a field that `kind` does not take, naming what it takes instead.
void check_kind_fields(const json& j, const std::string& path, const StepKind& kind) {
  check_fields(j, path, every_step_field());
  for (const auto& [key, value] : j.items()) {
    if (key == "name" ||
        std::find(kind.fields.begin(), kind.fields.end(), key) != kind.fields.end()) {
      continue;
    }
    for (const auto& [field, why] : kind.hints) {
      if (field == key) fail(field_path(path, key), std::string(why));
    }
    std::string takes = "\"name\"";
    for (std::string_view f : kind.fields) takes += ", \"" + std::string(f) + "\"";
    fail(field_path(path, key), "a \"" + std::string(kind.name) + "\" step takes only " + takes);
  }
}

std::string_view subject_name(Subject s) {
  switch (s) {
    case Subject::kStatus: return "status";
    case Subject::kJson: return "json";
    case Subject::kHeader: return "header";
    case Subject::kBody: return "body_contains";
    case Subject::kExitCode: return "exit_code";
  }
  return "";
}

// Refuses a condition on what steps of this kind never have (an exit code in a response):
// `steps[0].expect[1]: a "request" step has no "exit_code" to check (its conditions read ...)`.
void check_subjects(const StepKind& kind, const json& j, const std::string& path,
                    const std::vector<Condition>& conditions) {
  for (size_t i = 0; i < conditions.size(); ++i) {
    std::string_view subject = subject_name(conditions[i].subject);
    const auto& can = kind.subjects;
    if (std::find(can.begin(), can.end(), subject) != can.end()) continue;
    std::string reads;
    for (std::string_view s : can) reads += (reads.empty() ? "" : ", ") + shown(std::string(s));
    const bool vowel = std::string_view("aeiou").find(kind.name.front()) != std::string_view::npos;
    fail(j.is_array() ? element_path(path, i) : path,
         std::string(vowel ? "an " : "a ") + shown(std::string(kind.name)) + " step has no " +
             shown(std::string(subject)) + " to check (its conditions read " + reads + ")");
  }
}

bool reads_json(const Step& s) {
  bool captures = std::any_of(s.captures.begin(), s.captures.end(),
                              [](const Capture& c) { return c.source == Capture::Source::kJson; });
  return captures || any_json(s.expect) || any_json(s.abort_if);
}

// Reads step `index` at `path`; adds the variables it captures to `scope` for the steps after
// it. The kind reads its own fields; the fields kinds share are read here.
Step parse_step(const json& j, const std::string& path, size_t index, Scope& scope) {
  const StepKind& kind = kind_of(j, path);
  check_kind_fields(j, path, kind);
  auto at = [&](std::string_view name) { return field_path(path, name); };
  Step s;
  s.index = index;
  s.kind = &kind;
  kind.parse(j, path, s, scope);
  if (j.contains("name")) s.name = read_string(j["name"], at("name"));
  if (j.contains("expect")) s.expect = parse_conditions(j["expect"], at("expect"), false);
  if (j.contains("abort_if")) s.abort_if = parse_conditions(j["abort_if"], at("abort_if"), false);
  if (j.contains("expect")) check_subjects(kind, j["expect"], at("expect"), s.expect);
  if (j.contains("abort_if")) check_subjects(kind, j["abort_if"], at("abort_if"), s.abort_if);
  if (j.contains("retry")) s.retry = parse_retry(j["retry"], at("retry"));
  if (j.contains("capture")) s.captures = parse_captures(j["capture"], at("capture"));
  for (const Capture& c : s.captures) scope.insert(c.name);
  s.reads_json = s.reads_json || reads_json(s);
  return s;
}

}  // namespace

size_t parse_steps(const json& list, const std::string& path, Scope& scope) {
  if (!list.is_array() || list.empty()) fail(path, "expected a non-empty array of steps");
  std::vector<Step>& steps = *scope.steps;
  size_t first = steps.size();
  steps.resize(first + list.size());  // the run of indices is the list's, whatever it holds
  for (size_t i = 0; i < list.size(); ++i) {
    Step s = parse_step(list[i], element_path(path, i), first + i, scope);
    s.list_end = first + list.size();
    s.branch = scope.branch;
    steps[first + i] = std::move(s);  // (parse_step may have grown `steps`)
  }
  return first;
}

namespace {

nlohmann::json parse_vars(const json& doc, Scope& scope) {
  if (!doc.contains("vars")) return json::object();
  const json& vars = doc["vars"];
  if (!vars.is_object()) fail("vars", "expected an object");
  for (const auto& [name, value] : vars.items()) {
    scope.insert(check_variable_name(name, field_path("vars", name)));
  }
  return vars;
}

// `limits` (config/limits.h): an origin may be a template of the run's variables ("{{base}}"),
// which scenario::run_limits() expands; so it is read before the steps add their captures.
config::TargetLimits parse_limits(const json& j, const Scope& scope) {
  Result<config::TargetLimits> limits = config::parse_limits(j, "limits", /*templates=*/true);
  if (!limits) throw ParseError{limits.status().message()};
  for (const config::TargetLimit& l : *limits) {
    if (l.origin.find("{{") == std::string::npos) continue;
    const std::string at = "limits[" + shown(l.origin) + "]";
    Template t = read_template(json(l.origin), at, scope);
    for (const Template::Segment& s : t.segments()) {
      bool per_run = s.kind == Template::Kind::kLiteral ||
                     (s.kind == Template::Kind::kVariable && !s.text.starts_with("row."));
      if (!per_run) fail(at, "an origin may use the run's variables only, as in \"{{base}}\"");
    }
  }
  return std::move(*limits);
}

std::shared_ptr<const Scenario> parse_document(const json& doc, const ParseOptions& options) {
  if (!doc.is_object()) fail("", "expected a scenario: a JSON object with \"name\" and \"steps\"");
  check_nesting(doc);
  // "load" is read by `corral load` (config/load/parse.h); a run ignores it.
  check_fields(doc, "",
               {"name", "vars", "steps", "load", "start_spread", "limits", "tls", "http_version",
                "trace_context", "otlp_endpoint"});
  auto scenario = std::make_shared<Scenario>();
  scenario->name = read_string(required(doc, "", "name", "a string"), "name");
  Scope scope{{options.extra_vars.begin(), options.extra_vars.end()}, &options, "",
              &scenario->steps, {}, ""};
  scenario->vars = parse_vars(doc, scope);
  if (doc.contains("limits")) scenario->limits = parse_limits(doc["limits"], scope);
  if (doc.contains("tls")) scenario->tls = read_tls(doc["tls"], "tls", scope);
  if (doc.contains("http_version")) {
    scenario->http_version = read_http_version(doc["http_version"], "http_version");
  }
  parse_steps(required(doc, "", "steps", "a non-empty array"), "steps", scope);
  if (!scope.callback_url_at.empty()) {
    fail(scope.callback_url_at, "{{callback_url}} needs a callback step after this one");
  }
  if (doc.contains("start_spread")) {
    scenario->start_spread_ms = read_duration(doc["start_spread"], "start_spread");
  }
  if (doc.contains("trace_context")) {
    scenario->trace_context = read_bool(doc["trace_context"], "trace_context");
  }
  if (doc.contains("otlp_endpoint")) {
    scenario->otlp_endpoint = read_string(doc["otlp_endpoint"], "otlp_endpoint");
    const std::string origin = http::origin_of(scenario->otlp_endpoint);
    if (!origin.starts_with("http://") && !origin.starts_with("https://")) {
      fail("otlp_endpoint", "expected an http:// or https:// URL, as \"http://127.0.0.1:4318\"");
    }
  }
  scenario->source = doc;
  return scenario;
}

}  // namespace
}  // namespace detail

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
