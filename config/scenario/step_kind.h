// The registry of step kinds, the parsing half. A step kind is one folder under steps/ (for
// example steps/sleep/): its parse.cc registers a StepKind here with CORRAL_REGISTER_STEP_KIND,
// its run.cc registers the runner the worker's engine drives (worker/engine/step_runner.h).
// Nothing else in corral names a kind: the parser finds it by its mark, the engine by its name,
// and what the master and the engine do for some kinds only is a property of StepKind
// (takes_calls) or of the parsed Step (branches: steps that hold steps of their own).
//
// The parse halves are built as an OBJECT library whose objects every user of corral_config
// links (CMakeLists.txt), so registration in static initialisers cannot be dropped by the
// linker. step_kinds() may be called from main() on, from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corral::scenario {

struct Step;
namespace detail {
struct Scope;
}

struct StepKind {
  std::string_view name;  // "request", "poll", "sleep": shown in `corral show` and /metrics
  // The field that makes a step this kind. When the marks of two kinds are present, the kind
  // whose `fields` hold the other's mark wins (a poll step holds a "request"); otherwise the
  // step is refused.
  std::string_view mark;
  // Every field the kind takes besides "name", its mark included.
  std::vector<std::string_view> fields;
  // Why a field of another kind is refused here, where a plain "takes only" would mislead:
  // {"expect", "a poll step checks responses with \"until\" and \"fail_if\", not \"expect\""}.
  std::vector<std::pair<std::string_view, std::string_view>> hints;
  // What its `expect` and `abort_if` conditions may read ("status", "json", "header",
  // "body_contains", "exit_code"): a condition on anything else could never hold.
  std::vector<std::string_view> subjects;
  // A step of this kind waits for a call of its instance's token URL (POST /callbacks/<token>
  // on the master, steps/callback): the master answers calls only for such steps, journals each
  // and passes it to the worker running the instance, which hands it to the step's runner
  // (StepRunner::on_wake); `{{callback_url}}` is the URL of the next such step.
  bool takes_calls = false;
  // Reads the kind's fields of step `j` (at `path`, fields already checked against `fields`)
  // into `step`, whose kind and index are set. Sets step.name unless the file names the step;
  // throws detail::ParseError (through detail::fail) on anything wrong. The variables the step
  // captures are added to `scope` by the caller.
  void (*parse)(const nlohmann::json& j, const std::string& path, Step& step, detail::Scope& scope);
};

// Adds a kind; aborts on a duplicate name or mark (a programming error). Returns true so it can
// initialise a static.
bool register_step_kind(StepKind kind);
// Every registered kind, sorted by name.
std::vector<const StepKind*> step_kinds();
// The kind called `name`, or nullptr.
const StepKind* find_step_kind(std::string_view name);

}  // namespace corral::scenario

// CORRAL_REGISTER_STEP_KIND({.name = "sleep", .mark = "sleep", ...}) at namespace scope in the
// kind's parse.cc. The flag's name is unique in a unity build too.
#define CORRAL_REGISTER_STEP_KIND(...)                                                    \
  [[maybe_unused]] static const bool CORRAL_STEP_CONCAT(corral_step_kind_, __COUNTER__) = \
      ::corral::scenario::register_step_kind(::corral::scenario::StepKind __VA_ARGS__);
#define CORRAL_STEP_CONCAT(a, b) CORRAL_STEP_CONCAT_INNER(a, b)
#define CORRAL_STEP_CONCAT_INNER(a, b) a##b
