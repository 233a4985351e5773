// Condition evaluation and the wording of its results.
#include "config/scenario/condition.h"

#include <re2/re2.h>

#include <charconv>

namespace corral::scenario {
namespace {

// At most this much of a body or header goes into a message.
constexpr size_t kTextExcerpt = 120;

// What a condition's subject looked like in one response.
struct Observed {
  bool exists = false;
  std::string missing_note;               // why it does not exist, when that needs saying
  const nlohmann::json* value = nullptr;  // a JSON value (json subject)
  nlohmann::json owned;                   // the status code
  std::optional<std::string_view> text;   // header value or body
};

std::string subject_text(const Condition& c) {
  switch (c.subject) {
    case Subject::kStatus:
      return "status";
    case Subject::kJson:
      return c.pointer.empty() ? "the body" : c.pointer.to_string();
    case Subject::kHeader:
      return "header " + c.header;
    case Subject::kBody:
      return "body";
    case Subject::kExitCode:
      return "exit code";
  }
  return "";
}

Observed observe(const Condition& c, const ResponseView& r) {
  Observed o;
  switch (c.subject) {
    case Subject::kStatus:
      o.owned = r.status;
      o.value = &o.owned;
      break;
    case Subject::kJson:
      if (!r.json) {
        o.missing_note = " (the body is not JSON)";
      } else {
        o.value = resolve(*r.json, c.pointer);
      }
      break;
    case Subject::kHeader:
      o.text = r.header(c.header);
      break;
    case Subject::kBody:
      o.text = r.body;
      break;
    case Subject::kExitCode:
      if (r.exit_code) {
        o.owned = *r.exit_code;
        o.value = &o.owned;
      } else {
        o.missing_note = " (not a command's result)";
      }
      break;
  }
  o.exists = o.value != nullptr || o.text.has_value();
  return o;
}

std::string shown(const Observed& o) {
  if (o.value) return describe_value(*o.value);
  return describe_value(nlohmann::json(o.text->substr(0, kTextExcerpt * 2)), kTextExcerpt);
}

// The observed value as text, for `matches` and `contains`. A header or body is read in
// place; `storage` holds the text of a JSON value.
std::string_view as_text(const Observed& o, std::string& storage) {
  if (o.text) return *o.text;
  if (o.value->is_string()) return o.value->get_ref<const std::string&>();
  storage = o.value->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return storage;
}

bool equal(const Observed& o, const nlohmann::json& expected) {
  if (o.value) return *o.value == expected;
  if (expected.is_string()) return *o.text == expected.get_ref<const std::string&>();
  return *o.text == expected.dump();
}

std::optional<double> number(const Observed& o) {
  if (o.value) {
    if (!o.value->is_number()) return std::nullopt;
    return o.value->get<double>();
  }
  double d = 0;
  const char* end = o.text->data() + o.text->size();
  auto [ptr, ec] = std::from_chars(o.text->data(), end, d);
  if (ec != std::errc() || ptr != end || o.text->empty()) return std::nullopt;
  return d;
}

bool test(const Condition& c, const Observed& o) {
  if (c.op == Op::kExists) return o.exists == c.operand.get<bool>();
  if (!o.exists) return false;
  switch (c.op) {
    case Op::kEquals:
      return equal(o, c.operand);
    case Op::kNotEquals:
      return !equal(o, c.operand);
    case Op::kIn:
      for (const nlohmann::json& candidate : c.operand) {
        if (equal(o, candidate)) return true;
      }
      return false;
    case Op::kLt:
    case Op::kGt: {
      std::optional<double> n = number(o);
      if (!n) return false;
      double limit = c.operand.get<double>();
      return c.op == Op::kLt ? *n < limit : *n > limit;
    }
    case Op::kMatches: {
      std::string storage;
      return RE2::PartialMatch(as_text(o, storage), *c.regex);
    }
    case Op::kContains: {
      std::string storage;
      return as_text(o, storage).find(c.operand.get_ref<const std::string&>()) !=
             std::string_view::npos;
    }
    case Op::kExists:
      break;
  }
  return false;
}

std::string list_of(const nlohmann::json& values) {
  std::string out;
  for (const nlohmann::json& v : values) {
    if (!out.empty()) out += ", ";
    out += describe_value(v);
  }
  return out;
}

// What the condition expected, completing "..., expected <this>".
std::string expectation(const Condition& c, const Observed& o) {
  std::string operand = describe_value(c.operand);
  switch (c.op) {
    case Op::kEquals:
      return operand;
    case Op::kNotEquals:
      return "anything but " + operand;
    case Op::kExists:
      return c.operand.get<bool>() ? "it to exist" : "it not to exist";
    case Op::kIn:
      return "one of " + list_of(c.operand);
    case Op::kLt:
    case Op::kGt: {
      std::string comparison = c.op == Op::kLt ? "less than " : "greater than ";
      bool numeric = !o.exists || number(o).has_value();
      return (numeric ? "" : "a number ") + comparison + operand;
    }
    case Op::kMatches:
      return "to match " + operand;
    case Op::kContains:
      return "to contain " + operand;
  }
  return operand;
}

}  // namespace

const nlohmann::json* resolve(const nlohmann::json& doc, const nlohmann::json::json_pointer& p) {
  try {
    return doc.contains(p) ? &doc.at(p) : nullptr;
  } catch (const nlohmann::json::exception&) {
    return nullptr;  // e.g. an array index too large to represent: nothing is there
  }
}

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kEquals:
      return "equals";
    case Op::kNotEquals:
      return "not_equals";
    case Op::kExists:
      return "exists";
    case Op::kIn:
      return "in";
    case Op::kLt:
      return "lt";
    case Op::kGt:
      return "gt";
    case Op::kMatches:
      return "matches";
    case Op::kContains:
      return "contains";
  }
  return "";
}

bool holds(const Condition& c, const ResponseView& response) {
  return test(c, observe(c, response));
}

ConditionResult evaluate(const Condition& c, const ResponseView& response) {
  Observed o = observe(c, response);
  ConditionResult result;
  result.held = test(c, o);
  std::string seen = o.exists ? "was " + shown(o) : "does not exist" + o.missing_note;
  result.explanation = subject_text(c) + " " + seen;
  if (!result.held) result.explanation += ", expected " + expectation(c, o);
  return result;
}

std::string describe(const Condition& c) {
  std::string subject = subject_text(c);
  std::string operand = describe_value(c.operand);
  switch (c.op) {
    case Op::kEquals:
      return subject +
             (c.subject == Subject::kStatus || c.subject == Subject::kExitCode ? " is "
                                                                               : " equals ") +
             operand;
    case Op::kNotEquals:
      return subject + " does not equal " + operand;
    case Op::kExists:
      return subject + (c.operand.get<bool>() ? " exists" : " does not exist");
    case Op::kIn:
      return subject + " is one of " + list_of(c.operand);
    case Op::kLt:
      return subject + " is less than " + operand;
    case Op::kGt:
      return subject + " is greater than " + operand;
    case Op::kMatches:
      return subject + " matches " + operand;
    case Op::kContains:
      return subject + " contains " + operand;
  }
  return subject;
}

const Condition* first_failing(std::span<const Condition> conditions,
                               const ResponseView& response) {
  for (const Condition& c : conditions) {
    if (!holds(c, response)) return &c;
  }
  return nullptr;
}

ConditionResult all_hold(std::span<const Condition> conditions, const ResponseView& response) {
  const Condition* failing = first_failing(conditions, response);
  if (failing == nullptr) return {true, ""};
  return evaluate(*failing, response);
}

std::optional<ConditionResult> first_holding(std::span<const Condition> conditions,
                                             const ResponseView& response) {
  for (const Condition& c : conditions) {
    if (holds(c, response)) return evaluate(c, response);
  }
  return std::nullopt;
}

}  // namespace corral::scenario
