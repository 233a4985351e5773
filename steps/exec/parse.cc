// The "exec" step: runs a command (no shell) and judges its exit code and output.
// docs/scenarios.md, "exec".
#include "config/scenario/parse_internal.h"
#include "steps/exec/exec.h"

namespace corral::steps::exec {
namespace {

using namespace corral::scenario;
using namespace corral::scenario::detail;

std::vector<Template> read_argv(const json& j, const std::string& path, const Scope& scope) {
  if (!j.is_array() || j.empty()) fail(path, "expected a non-empty array of strings");
  std::vector<Template> argv;
  for (size_t i = 0; i < j.size(); ++i) {
    std::string at = element_path(path, i);
    if (!j[i].is_string()) fail(at, "expected a string, got " + shown(j[i]));
    argv.push_back(read_template(j[i], at, scope));
  }
  if (argv.front().source().empty()) fail(element_path(path, 0), "expected the program to run");
  return argv;
}

void parse(const json& j, const std::string& path, Step& s, Scope& scope) {
  std::string at = field_path(path, "exec");
  const json& e = j["exec"];
  check_fields(e, at, {"argv", "env", "cwd", "timeout", "max_output"});
  auto spec = std::make_shared<Exec>();
  spec->argv = read_argv(required(e, at, "argv", "an array like [\"make\", \"test\"]"),
                         field_path(at, "argv"), scope);
  if (e.contains("env")) {
    std::string env_at = field_path(at, "env");
    if (!e["env"].is_object()) fail(env_at, "expected an object of names and values");
    for (const auto& [name, value] : e["env"].items()) {
      std::string name_at = field_path(env_at, name);
      if (name.empty() || name.find('=') != std::string::npos) {
        fail(name_at, "an environment variable's name may not be empty or hold \"=\"");
      }
      if (!value.is_string()) fail(name_at, "expected a string, got " + shown(value));
      spec->env.emplace_back(name, read_template(value, name_at, scope));
    }
  }
  if (e.contains("cwd")) spec->cwd = read_template(e["cwd"], field_path(at, "cwd"), scope);
  s.limit_ms = e.contains("timeout")
                   ? read_positive_duration(e["timeout"], field_path(at, "timeout"))
                   : kDefaultTimeoutMs;
  if (e.contains("max_output")) {
    spec->max_output_bytes =
        read_size(e["max_output"], field_path(at, "max_output"), kMaxResponseLimit);
  }
  s.name = "exec " + spec->argv.front().source();
  s.spec = std::move(spec);
}

}  // namespace

CORRAL_REGISTER_STEP_KIND({
    .name = "exec",
    .mark = "exec",
    .fields = {"exec", "expect", "abort_if", "capture"},
    .hints = {{"timeout", "an exec step's limit is \"exec\": {\"timeout\": ...}"},
              {"retry", "an exec step runs its command once; it is not retried"}},
    .subjects = {"exit_code", "json", "body_contains"},
    .parse = parse,
})

}  // namespace corral::steps::exec
