// The "request" step: one HTTP request, judged by `expect`, tried again by `retry`.
// docs/scenarios.md, "request".
#include "config/scenario/parse_internal.h"

namespace corral::steps::request {
namespace {

using namespace corral::scenario;
using namespace corral::scenario::detail;

void parse(const json& j, const std::string& path, Step& s, Scope& scope) {
  s.request = parse_request(j["request"], field_path(path, "request"), scope);
  s.name = s.request.method + " " + s.request.url.source();
  if (j.contains("timeout")) {
    s.limit_ms = read_positive_duration(j["timeout"], field_path(path, "timeout"));
  }
}

}  // namespace

CORRAL_REGISTER_STEP_KIND({
    .name = "request",
    .mark = "request",
    .fields = {"request", "expect", "abort_if", "capture", "retry", "timeout"},
    .hints = {{"jitter",
               "a step's \"jitter\" is for \"sleep\"; a poll's goes in \"poll\", "
               "a retry's in \"retry\""}},
    .subjects = {"status", "json", "header", "body_contains"},
    .parse = parse,
})

}  // namespace corral::steps::request
