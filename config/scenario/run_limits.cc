#include <set>

#include "config/scenario/model.h"

namespace corral::scenario {

Result<config::TargetLimits> run_limits(const Scenario& s, const nlohmann::json& run_vars) {
  if (s.limits.empty()) return config::TargetLimits{};
  nlohmann::json vars = s.vars;
  if (run_vars.is_object()) vars.update(run_vars);
  JsonVars lookup(vars, 0, "");
  config::TargetLimits out;
  std::set<std::string> seen;
  for (config::TargetLimit limit : s.limits) {
    const std::string at = "limits[\"" + limit.origin + "\"]";
    if (limit.origin.find("{{") != std::string::npos) {
      auto t = Template::compile(limit.origin);
      if (!t) return invalid_argument(at + ": " + t.status().message());
      Status error;
      std::string url = t->expand(lookup, &error);
      if (!error.is_ok()) return invalid_argument(at + ": " + error.message());
      auto origin = config::limit_origin(url, at, /*bare=*/false);
      if (!origin) return origin.status();
      limit.origin = *origin;
    }
    if (!seen.insert(limit.origin).second) {
      return invalid_argument(at + ": names " + limit.origin + " a second time");
    }
    out.push_back(std::move(limit));
  }
  return out;
}

}  // namespace corral::scenario
