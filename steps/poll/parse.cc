// The "poll" step: a request repeated until a condition holds. docs/scenarios.md, "poll".
#include "config/scenario/parse_internal.h"
#include "steps/poll/poll.h"

namespace corral::steps::poll {
namespace {

using namespace corral::scenario;
using namespace corral::scenario::detail;

std::shared_ptr<const Poll> parse_poll(const json& j, const std::string& path, Step& s) {
  check_fields(j, path,
               {"every", "timeout", "until", "fail_if", "max_attempts", "backoff", "max_interval",
                "jitter"});
  auto p = std::make_shared<Poll>();
  auto at = [&](std::string_view name) { return field_path(path, name); };
  p->every_ms =
      read_positive_duration(required(j, path, "every", "a duration like \"10s\""), at("every"));
  if (j.contains("timeout")) s.limit_ms = read_positive_duration(j["timeout"], at("timeout"));
  p->until = parse_conditions(required(j, path, "until", "a condition or an array of conditions"),
                              at("until"), true);
  if (j.contains("fail_if")) p->fail_if = parse_conditions(j["fail_if"], at("fail_if"), false);
  if (j.contains("max_attempts")) {
    p->max_attempts = read_int(j["max_attempts"], at("max_attempts"), 1, 1000000);
  }
  if (s.limit_ms == 0 && p->max_attempts == 0) {
    fail(path, "a poll needs a \"timeout\" or \"max_attempts\", or it may never end");
  }
  if (j.contains("backoff")) p->backoff_factor = read_number(j["backoff"], at("backoff"), 1, 10);
  if (j.contains("jitter")) p->jitter = read_number(j["jitter"], at("jitter"), 0, 1);
  if (j.contains("max_interval")) {
    p->max_interval_ms = read_positive_duration(j["max_interval"], at("max_interval"));
    if (p->max_interval_ms < p->every_ms) {
      fail(at("max_interval"), "must not be shorter than every");
    }
  }
  return p;
}

void parse(const json& j, const std::string& path, Step& s, Scope& scope) {
  if (!j.contains("request")) {
    fail(field_path(path, "poll"), "a poll needs a \"request\" to repeat");
  }
  s.request = parse_request(j["request"], field_path(path, "request"), scope);
  s.name = s.request.method + " " + s.request.url.source();
  auto p = parse_poll(j["poll"], field_path(path, "poll"), s);
  s.reads_json = any_json(p->until) || any_json(p->fail_if);
  s.repeat_ms = p->every_ms;
  s.spec = std::move(p);
}

}  // namespace

CORRAL_REGISTER_STEP_KIND({
    .name = "poll",
    .mark = "poll",
    .fields = {"request", "poll", "abort_if", "capture", "retry"},
    .hints = {{"expect",
               "a poll step checks responses with \"until\" and \"fail_if\", not "
               "\"expect\""},
              {"timeout", "a poll step's limit is \"poll\": {\"timeout\": ...}"},
              {"jitter",
               "a step's \"jitter\" is for \"sleep\"; a poll's goes in \"poll\", "
               "a retry's in \"retry\""}},
    .subjects = {"status", "json", "header", "body_contains"},
    .parse = parse,
})

}  // namespace corral::steps::poll
