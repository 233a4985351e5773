// The "sleep" step: waits, sending nothing. docs/scenarios.md, "sleep".
#include "config/scenario/parse_internal.h"
#include "steps/sleep/sleep.h"

namespace corral::steps::sleep {
namespace {

using namespace corral::scenario;
using namespace corral::scenario::detail;

void parse(const json& j, const std::string& path, Step& s, Scope& /*scope*/) {
  auto sleep = std::make_shared<Sleep>();
  sleep->ms = read_duration(j["sleep"], field_path(path, "sleep"));
  if (j.contains("jitter")) {
    sleep->jitter = read_number(j["jitter"], field_path(path, "jitter"), 0, 1);
  }
  s.name = "sleep " + j["sleep"].get<std::string>();
  s.spec = std::move(sleep);
}

}  // namespace

CORRAL_REGISTER_STEP_KIND({
    .name = "sleep",
    .mark = "sleep",
    .fields = {"sleep", "jitter"},
    .hints = {},
    .subjects = {},
    .parse = parse,
})

}  // namespace corral::steps::sleep
