// Conditions: the checks of `expect`, `until` and `fail_if`, evaluated against one response.
//
// Scenario form (the parser builds a Condition from each):
//   {"status": 200}                      {"status": [200, 201]}
//   {"json": "/pointer", OP: value}      {"header": "name", OP: value}
//   {"body_contains": "text"}            {"exit_code": 0}   {"exit_code": [0, 3]}   (exec steps)
// OP is one of equals, not_equals, exists (true/false), in (array), lt, gt (numbers),
// matches (an RE2 pattern, found anywhere in the value: RE2::PartialMatch).
//
// Rules a user can rely on:
// - A missing JSON path or header (or a body that is not JSON) makes every condition on it
//   fail except `"exists": false`.
// - JSON values compare by JSON equality (1 equals 1.0; "1" does not equal 1). lt/gt need a
//   number. `matches` reads a string as its text and any other value as its JSON text.
// - Header values are text: they equal a string operand by exact text, any other operand by
//   its JSON text; lt/gt read the header as a number. Names are case-insensitive.
// Evaluation is pure and cheap (RE2 runs in linear time) and may run on any thread.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>

#include "config/scenario/response.h"

namespace re2 {
class RE2;
}

namespace corral::scenario {

enum class Subject { kStatus, kJson, kHeader, kBody, kExitCode };
enum class Op { kEquals, kNotEquals, kExists, kIn, kLt, kGt, kMatches, kContains };

struct Condition {
  Subject subject = Subject::kStatus;
  Op op = Op::kEquals;
  nlohmann::json::json_pointer pointer;  // kJson
  std::string header;                    // kHeader, as written
  // equals/not_equals: the value; exists: a boolean; in: an array; lt/gt: a number;
  // matches: the pattern; contains: the text.
  nlohmann::json operand;
  std::shared_ptr<const re2::RE2> regex;  // kMatches, compiled at parse time
};

struct ConditionResult {
  bool held = false;
  // What was seen, and when the condition did not hold what was expected:
  // `status was 500, expected 200`, `/status was "running", expected "done"`,
  // `/id does not exist, expected it to exist`. This is the failure reason users read.
  std::string explanation;
};

ConditionResult evaluate(const Condition& condition, const ResponseView& response);

// Whether the condition holds: evaluate() without its explanation, which costs far more than
// the check (a poll that is not done yet builds none).
bool holds(const Condition& condition, const ResponseView& response);

// The condition as text, for reports: `status is 200`, `/status equals "done"`,
// `header content-type matches "json"`, `body contains "ok"`.
std::string describe(const Condition& condition);

// Held when every condition holds (an `until` or `expect` list). When one does not, the
// result is that condition's; when all hold, the explanation is empty.
ConditionResult all_hold(std::span<const Condition> conditions, const ResponseView& response);

// The first condition that does not hold, or nullptr when all hold.
const Condition* first_failing(std::span<const Condition> conditions, const ResponseView& response);

// The first condition that holds (a `fail_if` list), or nullopt when none does.
std::optional<ConditionResult> first_holding(std::span<const Condition> conditions,
                                             const ResponseView& response);

// The value a JSON Pointer addresses in `doc`, or null when there is none. Never throws.
const nlohmann::json* resolve(const nlohmann::json& doc, const nlohmann::json::json_pointer& p);

// The name the parser and messages use for an operator: "equals", "not_equals", ...
std::string_view op_name(Op op);

}  // namespace corral::scenario
