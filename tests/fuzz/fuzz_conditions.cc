// Fuzz target: conditions, captures and templates (config/scenario/condition.h, capture.h,
// template.h) against a random response, the way the worker's engine evaluates a step.
//
// Input layout (every length is clamped to what is left; a missing part is empty):
//   bytes 0-1    status: big-endian u16 % 1000 (so 0 and other impossible codes occur too)
//   byte 2       flags: bit 0 = give the conditions the body parsed as JSON (the engine does
//                only when a step reads JSON); bits 1-3 = how many headers follow (0-7)
//   then sections, each a big-endian u16 length and that many bytes:
//     conditions  JSON: one condition or an array, the `expect` of a request step
//                 ({"status": 200} when not JSON)
//     captures    JSON: a step's `capture` object (none when not JSON)
//     template    text compiled with Template::compile and expanded with the captured values
//     headers     one section per header: "name:value" (no colon: the name, an empty value)
//   the rest     the response body, as is (any bytes: invalid UTF-8, deep JSON, ...)
//
// The conditions and captures are parsed through parse_scenario(), as a user writes them;
// an invalid scenario ends the input. Checks that:
// - evaluation never throws; every explanation and capture message is valid UTF-8 (they end up
//   in JSON: failure reasons in events, the journal and API answers);
// - all_hold and first_holding agree with evaluating the conditions one by one;
// - `exists: false` holds exactly when `exists: true` does not;
// - templates (the section when it is UTF-8, and the body as a JSON template when it is JSON
//   and nested no deeper than a scenario may be) expand without throwing, and typed
//   substitution (expand_json) gives the same text as expand();
// - the captured variables and expansions, as an `events` frame, encode and decode back (what
//   the worker sends the master).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/scenario/capture.h"
#include "config/scenario/condition.h"
#include "config/scenario/parse.h"
#include "config/scenario/template.h"
#include "shared/ipc/codec.h"
#include "tests/fuzz/check.h"

namespace {

using corral::fuzz::valid_utf8;
using namespace corral::scenario;
using nlohmann::json;

// Reads the input front to back; past the end every read is empty.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  uint8_t byte() {
    if (data_.empty()) return 0;
    auto b = static_cast<uint8_t>(data_[0]);
    data_.remove_prefix(1);
    return b;
  }
  uint16_t u16() {
    uint16_t high = byte();
    return static_cast<uint16_t>((high << 8) | byte());
  }
  std::string_view section() {
    size_t n = u16();
    std::string_view s = data_.substr(0, n);
    data_.remove_prefix(s.size());
    return s;
  }
  std::string_view rest() const { return data_; }

 private:
  std::string_view data_;
};

json parse_or(std::string_view text, json fallback) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

void check_conditions(const std::vector<Condition>& conditions, const ResponseView& view) {
  bool all = true;
  std::optional<size_t> first;
  for (size_t i = 0; i < conditions.size(); ++i) {
    ConditionResult r = evaluate(conditions[i], view);
    FUZZ_CHECK(valid_utf8(r.explanation));
    FUZZ_CHECK(!r.explanation.empty());
    all = all && r.held;
    if (r.held && !first) first = i;
    if (conditions[i].op == Op::kExists) {
      Condition negated = conditions[i];
      negated.operand = !negated.operand.get<bool>();
      FUZZ_CHECK(evaluate(negated, view).held != r.held);
    }
  }
  ConditionResult every = all_hold(conditions, view);
  FUZZ_CHECK(every.held == all);
  FUZZ_CHECK(every.held == every.explanation.empty());
  std::optional<ConditionResult> holding = first_holding(conditions, view);
  FUZZ_CHECK(holding.has_value() == first.has_value());
  if (holding) FUZZ_CHECK(holding->explanation == evaluate(conditions[*first], view).explanation);
}

// Whether `j` nests arrays and objects at most `levels` deep (recursing at most that far).
bool nested_within(const json& j, size_t levels) {
  if (!j.is_structured()) return true;
  if (levels == 0) return false;
  for (const json& child : j) {
    if (!nested_within(child, levels - 1)) return false;
  }
  return true;
}

// What the worker does with captured variables: send them to the master in an `events` frame.
void check_sendable(const json& event) {
  json payload = {{"events", json::array({event})}};
  auto bytes = corral::ipc::encode(corral::ipc::MessageType::kEvents, payload);
  FUZZ_CHECK(bytes.is_ok());
  corral::ipc::Decoder decoder(corral::ipc::Sender::kMaster);
  std::vector<corral::ipc::Frame> frames;
  FUZZ_CHECK(decoder.feed(*bytes, frames).is_ok());
  FUZZ_CHECK(frames.size() == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(std::string_view(reinterpret_cast<const char*>(data), size));
  int status = in.u16() % 1000;
  uint8_t flags = in.byte();
  bool give_json = (flags & 1) != 0;
  size_t header_count = (flags >> 1) & 7;
  json conditions = parse_or(in.section(), {{"status", 200}});
  json captures = parse_or(in.section(), nullptr);
  std::string_view template_text = in.section();
  std::vector<Header> headers;
  for (size_t i = 0; i < header_count; ++i) {
    std::string_view h = in.section();
    size_t colon = h.find(':');
    std::string_view name = h.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : h.substr(colon + 1);
    headers.emplace_back(std::string(name), std::string(value));
  }
  std::string_view body = in.rest();

  json step = {{"request", {{"url", "http://h/"}}}, {"expect", conditions}};
  if (!captures.is_null()) step["capture"] = captures;
  auto scenario = parse_scenario({{"name", "fuzz"}, {"steps", json::array({step})}});
  if (!scenario) return 0;
  const Step& request_step = (*scenario)->steps[0];

  json body_json;
  if (give_json) body_json = json::parse(body, nullptr, false);
  ResponseView view;
  view.status = status;
  view.headers = headers;
  view.body = body;
  view.json = give_json && !body_json.is_discarded() ? &body_json : nullptr;

  check_conditions(request_step.expect, view);

  json vars = json::object();
  for (const Capture& c : request_step.captures) {
    auto value = capture(c, view);
    if (!value) {
      FUZZ_CHECK(value.status().code() == corral::Code::kNotFound);
      FUZZ_CHECK(valid_utf8(value.status().message()));
      continue;
    }
    vars[c.name] = std::move(*value);
  }
  json sent = {{"vars", vars}};

  // Scenario templates are UTF-8: they come from JSON.
  JsonVars template_vars(vars, status, "r1-fuzz");
  corral::Result<Template> t = corral::invalid_argument("not UTF-8");
  if (valid_utf8(std::string(template_text))) t = Template::compile(template_text);
  if (t) {
    corral::Status error;
    std::string text = t->expand(template_vars, &error);
    json typed = t->expand_json(template_vars, &error);
    // Typed substitution changes the type, never the text ({{uuid}} differs at each expansion).
    bool uuid = false;
    for (const Template::Segment& segment : t->segments()) {
      uuid = uuid || segment.kind == Template::Kind::kUuid;
    }
    if (!uuid) {
      FUZZ_CHECK(text == (typed.is_string()
                              ? typed.get<std::string>()
                              : typed.dump(-1, ' ', false, json::error_handler_t::replace)));
    }
    sent["text"] = text;
    sent["typed"] = typed;
  }
  if (view.json && nested_within(*view.json, kMaxNesting)) {
    if (auto body_template = JsonTemplate::compile(*view.json)) {
      sent["body"] = body_template->expand(template_vars);
    }
  }
  check_sendable(sent);
  return 0;
}
