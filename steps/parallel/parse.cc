// The "parallel" step: runs lists of steps (branches) at once and joins them.
// docs/scenarios.md, "parallel".
#include <set>

#include "config/scenario/parse_internal.h"
#include "steps/parallel/parallel.h"

namespace corral::steps::parallel {
namespace {

using namespace corral::scenario;
using namespace corral::scenario::detail;

// Branch `b` at `path`: [steps...], or {"name": "eu", "steps": [...]}. What it captured is
// added to `exports` as "<branch>.<name>".
Step::Branch parse_branch(const json& j, const std::string& path, size_t b, const Scope& scope,
                          std::vector<std::string>& exports) {
  Step::Branch branch;
  branch.name = "branch" + std::to_string(b);
  const json* list = &j;
  std::string list_path = path;
  if (j.is_object()) {
    check_fields(j, path, {"name", "steps"});
    if (j.contains("name")) {
      branch.name = check_variable_name(read_string(j["name"], field_path(path, "name")),
                                        field_path(path, "name"));
    }
    list = &required(j, path, "steps", "a non-empty array of steps");
    list_path = field_path(path, "steps");
  } else if (!j.is_array()) {
    fail(path, "expected an array of steps or {\"name\": ..., \"steps\": [...]}");
  }
  // The branch sees what was defined before the parallel step, and its own captures.
  Scope inner = scope;
  inner.captured.clear();
  inner.branch = scope.branch.empty() ? branch.name : scope.branch + "/" + branch.name;
  branch.first = parse_steps(*list, list_path, inner);
  const auto& steps = *scope.steps;
  for (size_t i = branch.first; i < steps[branch.first].list_end; ++i) {
    if (steps[i].kind->name == "callback") {
      fail(element_path(list_path, i - branch.first),
           "a callback step cannot wait inside a parallel branch: put it after the parallel step");
    }
  }
  if (inner.callback_url_at != scope.callback_url_at) {
    fail(inner.callback_url_at, "{{callback_url}} cannot be used inside a parallel branch");
  }
  for (const std::string& name : inner.captured) exports.push_back(branch.name + "." + name);
  return branch;
}

size_t parse_join(const json& j, const std::string& path, size_t branches) {
  if (j == "all") return branches;
  if (j == "any") return 1;
  if (j.is_object()) {
    check_fields(j, path, {"at_least"});
    const std::string at = field_path(path, "at_least");
    return static_cast<size_t>(
        read_int(required(j, path, "at_least", "a number of branches"), at, 1,
                 static_cast<int>(branches)));
  }
  fail(path, "expected \"all\", \"any\" or {\"at_least\": n}, got " + shown(j));
}

void parse(const json& j, const std::string& path, Step& s, Scope& scope) {
  const std::string at = field_path(path, "parallel");
  const json& list = j["parallel"];
  if (!list.is_array() || list.empty()) fail(at, "expected a non-empty array of branches");
  auto spec = std::make_shared<Parallel>();
  std::set<std::string> names;
  // A branch sees what was defined before the parallel step, not its siblings' captures: those
  // exist only after the join.
  std::vector<std::string> exports;
  for (size_t b = 0; b < list.size(); ++b) {
    s.branches.push_back(parse_branch(list[b], element_path(at, b), b, scope, exports));
    if (!names.insert(s.branches.back().name).second) {
      fail(element_path(at, b), "another branch is called \"" + s.branches.back().name + "\"");
    }
  }
  for (std::string& name : exports) scope.insert(std::move(name));
  const size_t n = s.branches.size();
  spec->needed = j.contains("join") ? parse_join(j["join"], field_path(path, "join"), n) : n;
  spec->max_concurrent = n;
  if (j.contains("max_concurrent")) {
    spec->max_concurrent = static_cast<size_t>(
        read_int(j["max_concurrent"], field_path(path, "max_concurrent"), 1, 100000));
  }
  if (j.contains("timeout")) {
    s.limit_ms = read_positive_duration(j["timeout"], field_path(path, "timeout"));
  }
  std::string shown_names;
  for (const auto& b : s.branches) shown_names += (shown_names.empty() ? "" : ", ") + b.name;
  s.name = "parallel (" + shown_names + ")";
  s.exports = true;
  s.spec = std::move(spec);
}

}  // namespace

CORRAL_REGISTER_STEP_KIND({
    .name = "parallel",
    .mark = "parallel",
    .fields = {"parallel", "join", "max_concurrent", "timeout"},
    .hints = {{"capture", "a parallel step's branches capture; after the join their variables "
                          "read {{<branch>.<name>}}"},
              {"retry", "a parallel step is not retried; its branches' steps may be"}},
    .subjects = {},
    .parse = parse,
})

}  // namespace corral::steps::parallel
