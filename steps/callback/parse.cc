// The "callback" step: waits until the system under test calls the step's URL.
// docs/scenarios.md, "callback".
#include "config/scenario/parse_internal.h"
#include "steps/callback/callback.h"

namespace corral::steps::callback {
namespace {

using namespace corral::scenario;
using namespace corral::scenario::detail;

void parse(const json& j, const std::string& path, Step& s, Scope& scope) {
  std::string at = field_path(path, "callback");
  const json& c = j["callback"];
  if (!c.is_object()) fail(at, "expected an object like {\"timeout\": \"30m\"}");
  check_fields(c, at, {"timeout", "heartbeat"});
  auto spec = std::make_shared<Callback>();
  s.limit_ms = c.contains("timeout")
                   ? read_positive_duration(c["timeout"], field_path(at, "timeout"))
                   : kDefaultTimeoutMs;
  if (c.contains("heartbeat")) {
    spec->heartbeat_ms = read_positive_duration(c["heartbeat"], field_path(at, "heartbeat"));
  }
  s.name = "callback";
  s.spec = std::move(spec);
  s.reads_json = true;          // the caller's body is JSON
  scope.callback_url_at.clear();  // the {{callback_url}} before it is this step's
}

}  // namespace

CORRAL_REGISTER_STEP_KIND({
    .name = "callback",
    .mark = "callback",
    .fields = {"callback", "expect", "abort_if", "capture"},
    .hints = {{"timeout", "a callback step's limit is \"callback\": {\"timeout\": ...}"},
              {"retry", "a callback step waits for one call; it is not retried"}},
    .subjects = {"json", "body_contains"},
    .takes_calls = true,
    .parse = parse,
})

}  // namespace corral::steps::callback
