// Fuzz target: the scenario parser and validator (config/scenario/parse.h).
//
// Input: any bytes. Those that parse as JSON (nlohmann::json::parse without exceptions) are
// given to parse_scenario() with the run-time vars {"base", "token"} (the examples use
// {{base}} without defining it); the rest are skipped. The seed corpus holds the scenarios of
// examples/ and docs/scenarios.md and one file per validation error the docs list.
//
// Checks that:
// - parsing never throws and a rejection is kInvalidArgument with a message that names the
//   problem and is valid UTF-8 (the API sends it as JSON);
// - a rejection never comes from the parser's safety net ("invalid scenario: <json exception>"),
//   which would mean a check let a wrong type through;
// - an accepted scenario keeps the model's invariants (model.h): steps not empty and indexed,
//   a poll has `until` and a bound, a `matches` condition has a compiled pattern, at most one
//   of json/body, every template variable defined before use;
// - describing every condition gives valid UTF-8, and the model keeps the document as its source.
#include <cstdint>
#include <set>
#include <string>

#include <re2/re2.h>

#include "config/scenario/parse.h"
#include "steps/poll/poll.h"
#include "tests/fuzz/check.h"

namespace {

using corral::fuzz::valid_utf8;
using namespace corral::scenario;
using corral::steps::poll::Poll;

using Scope = std::set<std::string>;

void check_template(const Template& t, const Scope& scope) {
  for (const std::string& name : t.variables()) FUZZ_CHECK(scope.contains(name));
}

void check_conditions(const std::vector<Condition>& conditions) {
  for (const Condition& c : conditions) {
    if (c.op == Op::kMatches) FUZZ_CHECK(c.regex && c.regex->ok());
    if (c.op == Op::kExists) FUZZ_CHECK(c.operand.is_boolean());
    if (c.op == Op::kIn) FUZZ_CHECK(c.operand.is_array() && !c.operand.empty());
    if (c.op == Op::kLt || c.op == Op::kGt) FUZZ_CHECK(c.operand.is_number());
    FUZZ_CHECK(valid_utf8(describe(c)));
  }
}

void check_model(const Scenario& s, const Scope& extra) {
  FUZZ_CHECK(!s.name.empty());
  FUZZ_CHECK(s.vars.is_object());
  FUZZ_CHECK(!s.steps.empty());
  Scope scope = extra;
  for (const auto& [name, value] : s.vars.items()) scope.insert(name);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& step = s.steps[i];
    FUZZ_CHECK(step.index == i);
    FUZZ_CHECK(!step.name.empty());
    FUZZ_CHECK(step.kind != nullptr && find_step_kind(step.kind->name) == step.kind);
    const std::string_view kind = step.kind->name;
    if (kind != "sleep") {
      const RequestSpec& r = step.request;
      FUZZ_CHECK(!(r.json && r.body));
      FUZZ_CHECK(r.timeout_ms > 0);
      check_template(r.url, scope);
      for (const auto& [name, value] : r.headers) {
        FUZZ_CHECK(!name.empty());
        check_template(value, scope);
      }
      if (r.body) check_template(*r.body, scope);
      if (r.json) {
        for (const JsonTemplate::Slot& slot : r.json->slots()) check_template(slot.value, scope);
      }
      FUZZ_CHECK(step.retry.attempts >= 1 && step.retry.attempts <= 100);
      FUZZ_CHECK(step.retry.max_interval_ms >= step.retry.initial_interval_ms);
    }
    if (kind == "poll") {
      const Poll& poll = step.spec_as<Poll>();
      FUZZ_CHECK(poll.every_ms > 0);
      FUZZ_CHECK(!poll.until.empty());
      FUZZ_CHECK(step.limit_ms > 0 || poll.max_attempts > 0);
      FUZZ_CHECK(step.expect.empty());
      FUZZ_CHECK(poll.max_interval_ms == 0 || poll.max_interval_ms >= poll.every_ms);
      check_conditions(poll.until);
      check_conditions(poll.fail_if);
    }
    if (kind == "sleep") {
      FUZZ_CHECK(step.expect.empty() && step.captures.empty());
      FUZZ_CHECK(step.spec != nullptr);
    }
    check_conditions(step.expect);
    for (const Capture& c : step.captures) scope.insert(c.name);
  }
}

// Whether parse_scenario()'s catch of a nlohmann exception wrote `message`. Its text starts
// "invalid scenario: ", but so does a complaint about a top-level key of that name (found by this
// target: corpus/fuzz_scenario_parser/regress-key-like-safety-net).
bool from_safety_net(const std::string& message, const nlohmann::json& doc) {
  if (!message.starts_with("invalid scenario: ")) return false;
  for (const auto& [key, value] : doc.items()) {
    if (message.starts_with(key + ": ")) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return 0;
  static const std::set<std::string> kExtra = {"base", "token"};
  auto parsed = parse_scenario(doc, kExtra);
  if (!parsed) {
    const std::string& message = parsed.status().message();
    FUZZ_CHECK(parsed.status().code() == corral::Code::kInvalidArgument);
    FUZZ_CHECK(!message.empty());
    FUZZ_CHECK(valid_utf8(message));
    if (from_safety_net(message, doc)) {
      std::fprintf(stderr, "the parser's safety net caught: %s\n", message.c_str());
      std::abort();
    }
    return 0;
  }
  const Scenario& s = **parsed;
  check_model(s, Scope(kExtra.begin(), kExtra.end()));
  FUZZ_CHECK(s.source == doc);
  return 0;
}
