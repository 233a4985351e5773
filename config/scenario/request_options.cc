// What a scenario's requests are sent with, as far as the master needs to know it.
#include "config/scenario/model.h"

namespace corral::scenario {

std::vector<std::string> unverified_steps(const Scenario& s, const http::TlsOptions& base) {
  const http::TlsOptions scenario_tls = s.tls.over(base);
  std::vector<std::string> names;
  for (const Step& step : s.steps) {
    if (step.request.url.source().empty()) continue;  // a kind that sends no request
    const auto& spec = step.request;
    http::TlsOptions tls = spec.tls ? spec.tls->over(scenario_tls) : scenario_tls;
    if (!tls.verify.value_or(true)) names.push_back(step.name);
  }
  return names;
}

}  // namespace corral::scenario
