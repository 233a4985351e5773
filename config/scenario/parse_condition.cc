// Parsing conditions (expect, until, fail_if) and captures.
#include <algorithm>

#include <re2/re2.h>

#include "config/scenario/parse_internal.h"

namespace corral::scenario::detail {
namespace {

struct OpName {
  std::string_view name;
  Op op;
};
constexpr OpName kOps[] = {
    {"equals", Op::kEquals},   {"not_equals", Op::kNotEquals},
    {"exists", Op::kExists},   {"in", Op::kIn},
    {"lt", Op::kLt},           {"gt", Op::kGt},
    {"matches", Op::kMatches},
};
constexpr std::string_view kOpList = "equals, not_equals, exists, in, lt, gt, matches";
constexpr std::string_view kSubjects =
    "\"status\", \"json\", \"header\", \"body_contains\", \"exit_code\"";

std::shared_ptr<const re2::RE2> read_regex(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, "expected a regular expression string, got " + shown(j));
  RE2::Options options;
  options.set_log_errors(false);
  auto regex = std::make_shared<const re2::RE2>(j.get<std::string>(), options);
  if (!regex->ok()) {
    // RE2's error() is "<reason>: <offending part>"; the pattern is shown already.
    std::string reason = regex->error();
    std::string suffix = ": " + regex->error_arg();
    if (reason.ends_with(suffix)) reason.resize(reason.size() - suffix.size());
    fail(path, "invalid regular expression " + shown(j) + ": " + reason);
  }
  return regex;
}

bool is_status_code(const json& j) {
  return j.is_number_integer() && j.get<int64_t>() >= 100 && j.get<int64_t>() <= 599;
}

bool is_exit_code(const json& j) {
  return j.is_number_integer() && j.get<int64_t>() >= 0 && j.get<int64_t>() <= 255;
}

// A "status" or "exit_code" condition: one value, or an array of them.
void read_code(const json& j, const std::string& path, std::string_view subject, Condition& c) {
  std::string at = field_path(path, subject);
  const json& value = j[subject];
  const bool status = subject == "status";
  auto valid = [&](const json& v) { return status ? is_status_code(v) : is_exit_code(v); };
  bool ok = valid(value);
  if (value.is_array() && !value.empty()) {
    ok = true;
    for (const json& v : value) ok = ok && valid(v);
  }
  if (!ok) {
    fail(at, std::string(status ? "expected a status code (100-599)"
                                : "expected an exit code (0-255)") +
                 " or an array of them, got " + shown(value));
  }
  c.subject = status ? Subject::kStatus : Subject::kExitCode;
  c.op = value.is_array() ? Op::kIn : Op::kEquals;
  c.operand = value;
}

void read_operand(const json& value, const std::string& at, Condition& c) {
  c.operand = value;
  switch (c.op) {
    case Op::kEquals:
    case Op::kNotEquals:
      return;
    case Op::kExists:
      if (!value.is_boolean()) fail(at, "expected true or false, got " + shown(value));
      return;
    case Op::kIn:
      if (!value.is_array() || value.empty()) fail(at, "expected a non-empty array");
      return;
    case Op::kLt:
    case Op::kGt:
      if (!value.is_number()) fail(at, "expected a number, got " + shown(value));
      return;
    case Op::kMatches:
      c.regex = read_regex(value, at);
      return;
    case Op::kContains:
      return;
  }
}

// The operator of a "json" or "header" condition: exactly one of kOps.
void read_op(const json& j, const std::string& path, std::string_view subject, Condition& c) {
  const OpName* found = nullptr;
  size_t count = 0;
  for (const OpName& o : kOps) {
    if (!j.contains(o.name)) continue;
    ++count;
    found = &o;
  }
  if (count != 1) {
    fail(path, "a \"" + std::string(subject) + "\" condition needs exactly one of " +
                   std::string(kOpList));
  }
  c.op = found->op;
  read_operand(j[found->name], field_path(path, found->name), c);
}

Condition parse_condition(const json& j, const std::string& path) {
  check_fields(j, path,
               {"status", "json", "header", "body_contains", "exit_code", "equals", "not_equals",
                "exists", "in", "lt", "gt", "matches"});
  int subjects = 0;
  for (std::string_view s : {"status", "json", "header", "body_contains", "exit_code"}) {
    subjects += j.contains(s) ? 1 : 0;
  }
  if (subjects != 1) {
    fail(path, "a condition needs exactly one of " + std::string(kSubjects));
  }
  Condition c;
  if (j.contains("status") || j.contains("body_contains") || j.contains("exit_code")) {
    std::string_view subject = j.contains("status")      ? "status"
                               : j.contains("exit_code") ? "exit_code"
                                                         : "body_contains";
    for (const OpName& o : kOps) {
      if (j.contains(o.name)) {
        fail(field_path(path, o.name), "not allowed with \"" + std::string(subject) + "\"");
      }
    }
    if (subject != "body_contains") {
      read_code(j, path, subject, c);
    } else {
      c.subject = Subject::kBody;
      c.op = Op::kContains;
      c.operand = read_string(j["body_contains"], field_path(path, "body_contains"));
    }
    return c;
  }
  if (j.contains("json")) {
    c.subject = Subject::kJson;
    c.pointer = read_pointer(j["json"], field_path(path, "json"));
    read_op(j, path, "json", c);
  } else {
    c.subject = Subject::kHeader;
    c.header = read_string(j["header"], field_path(path, "header"));
    read_op(j, path, "header", c);
  }
  return c;
}

Capture parse_capture(const std::string& name, const json& j, const std::string& path) {
  check_fields(j, path, {"json", "header", "status", "body"});
  if (j.size() != 1) {
    fail(path, "a capture needs exactly one of \"json\", \"header\", \"status\", \"body\"");
  }
  Capture c;
  c.name = name;
  const std::string& key = j.begin().key();
  const json& value = j.begin().value();
  std::string at = field_path(path, key);
  if (key == "json") {
    c.source = Capture::Source::kJson;
    c.pointer = read_pointer(value, at);
  } else if (key == "header") {
    c.source = Capture::Source::kHeader;
    c.header = read_string(value, at);
  } else {
    c.source = key == "status" ? Capture::Source::kStatus : Capture::Source::kBody;
    if (value != true) fail(at, "expected true, got " + shown(value));
  }
  return c;
}

}  // namespace

std::vector<Condition> parse_conditions(const json& j, const std::string& path, bool non_empty) {
  std::vector<Condition> conditions;
  if (j.is_object()) {
    conditions.push_back(parse_condition(j, path));
    return conditions;
  }
  if (!j.is_array()) fail(path, "expected a condition or an array of conditions");
  if (non_empty && j.empty()) fail(path, "expected a non-empty array");
  for (size_t i = 0; i < j.size(); ++i) {
    conditions.push_back(parse_condition(j[i], element_path(path, i)));
  }
  return conditions;
}

bool any_json(const std::vector<Condition>& conditions) {
  return std::any_of(conditions.begin(), conditions.end(),
                     [](const Condition& c) { return c.subject == Subject::kJson; });
}

std::vector<Capture> parse_captures(const json& j, const std::string& path) {
  if (!j.is_object()) fail(path, "expected an object of variable names and sources");
  std::vector<Capture> captures;
  for (const auto& [name, value] : j.items()) {
    std::string at = field_path(path, name);
    check_variable_name(name, at);
    captures.push_back(parse_capture(name, value, at));
  }
  return captures;
}

}  // namespace corral::scenario::detail
