#include "cli/find_max.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "cli/format.h"
#include "cli/load_view.h"
#include "cli/table.h"

namespace corral::cli {

using nlohmann::json;

KneeStep knee_step(const api::LoadAnswer& test, double target) {
  KneeStep s;
  s.id = test.id;
  s.target = target;
  s.state = test.state;
  s.rps = test.rps;
  s.p50_ms = test.latency.p50;
  s.p99_ms = test.latency.p99;
  s.error_rate = test.errors.rate;
  const api::LoadIterations& it = test.iterations;
  const auto dropped = static_cast<double>(it.dropped);
  const auto arrivals = static_cast<double>(it.dropped + it.passed + it.failed + it.interrupted);
  s.dropped_rate = arrivals > 0 ? dropped / arrivals : 0;
  return s;
}

std::string past_knee(const KneeStep* prev, const KneeStep& cur, const KneeBounds& b) {
  if (cur.state == "stopped" || cur.state == "aborted") return "the step was " + cur.state;
  if (cur.error_rate > b.error_rate) {
    return "errors " + percent(cur.error_rate) + " > " + percent(b.error_rate);
  }
  if (cur.dropped_rate > b.dropped_rate) {
    return "dropped " + percent(cur.dropped_rate) + " > " + percent(b.dropped_rate);
  }
  if (cur.p99_ms > b.p99_ms) {
    return "p99 " + latency_text(cur.p99_ms) + " > " + latency_text(b.p99_ms);
  }
  if (prev == nullptr || prev->rps <= 0 || prev->target <= 0) return "";
  const double offered = cur.target / prev->target - 1;
  const double gained = cur.rps / prev->rps - 1;
  if (offered > 0 && gained < b.min_gain * offered) {
    return "throughput " + fixed(gained * 100, 1) + " % for " + fixed(offered * 100, 1) +
           " % more load";
  }
  return "";
}

double next_target(double target, double factor, bool fractional) {
  double next = target * factor;
  if (!fractional) next = std::ceil(next);
  return std::max(next, target + 1);
}

std::string render_knee(const std::vector<KneeStep>& steps, size_t broke, const std::string& why,
                        const std::string& unit) {
  std::ostringstream out;
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < steps.size(); ++i) {
    const KneeStep& s = steps[i];
    rows.push_back({std::to_string(i + 1), fixed(s.target, s.target == std::floor(s.target) ? 0 : 1),
                    fixed(s.rps, 0), latency_text(s.p50_ms), latency_text(s.p99_ms),
                    percent(s.error_rate), percent(s.dropped_rate), s.id,
                    i == broke ? "<- " + why : ""});
  }
  out << render_table({"step", unit, "rps", "p50", "p99", "errors", "dropped", "test", ""}, rows,
                      TableStyle::kAscii);
  if (broke == 0) {
    out << "no sustainable load: the first step broke (" << why << ")\n";
  } else if (!steps.empty()) {
    const KneeStep& best = steps[std::min(broke, steps.size()) - 1];
    out << "highest sustainable load: " << fixed(best.target, 0) << " " << unit << ", "
        << fixed(best.rps, 0) << " requests/s, p99 " << latency_text(best.p99_ms) << ", errors "
        << percent(best.error_rate) << "\n";
    out << (broke < steps.size() ? "broke first: " + why + " at " + fixed(steps[broke].target, 0) +
                                       " " + unit
            : why.empty()        ? std::string("no knee found within the steps run")
                                 : "stopped: " + why)
        << "\n";
    if (broke < steps.size() && why.rfind("dropped", 0) == 0) {
      out << "note: arrivals were dropped because every VU was busy: the server slowed down, or "
             "max_vus is too few for this rate; search again with a higher --max-vus to tell "
             "which\n";
    }
  }
  return out.str();
}

namespace {

// The bounds as each step's thresholds, so that a step past them ends failed in `corral runs`
// too (the throughput test is the search's alone). They replace the file's thresholds, which
// were written for one test at one load.
json bound_thresholds(const KneeBounds& b, bool open) {
  auto number = [](double v) {
    std::ostringstream text;
    text << v;
    return text.str();
  };
  json t = {{"latency", {"p99 <= " + number(b.p99_ms) + "ms"}},
            {"errors", {"rate <= " + number(b.error_rate * 100) + "%"}}};
  if (open) t["dropped"] = {"rate <= " + number(b.dropped_rate * 100) + "%"};
  return t;
}

json step_json(const KneeStep& s) {
  return {{"test", s.id},        {"target", s.target},         {"rps", s.rps},
          {"p50", s.p50_ms},     {"p99", s.p99_ms},            {"error_rate", s.error_rate},
          {"dropped_rate", s.dropped_rate}, {"state", s.state}};
}

}  // namespace

StepLoad step_load(json load, const std::string& duration, const KneeBounds& bounds) {
  StepLoad s;
  s.key = "vus", s.unit = "VUs";
  if (load.contains("rate") || load.value("model", "") == "open") {
    s.key = "rate", s.unit = "iterations/s";
  }
  if (load.contains("connections") || load.value("model", "") == "held") {
    s.key = "connections", s.unit = "connections";
  }
  if (load.contains(s.key) && load[s.key].is_number()) s.start = load[s.key].get<double>();
  for (const char* k : {"stages", "start", "duration", "vus", "rate", "connections"}) load.erase(k);
  load["duration"] = duration;
  load["thresholds"] = bound_thresholds(bounds, s.key == "rate");
  s.load = std::move(load);
  return s;
}

json StepLoad::at(double target) const {
  json out = load;
  out[key] = key == "rate" ? json(target) : json(static_cast<int64_t>(target));
  return out;
}

Result<json> find_knee(json load, const KneeSearch& search,
                       const std::function<Result<api::LoadAnswer>(const json&)>& run_step,
                       std::ostream& out) {
  const StepLoad steps_load = step_load(std::move(load), search.duration, search.bounds);
  const std::string& key = steps_load.key;
  const std::string& unit = steps_load.unit;
  double target = steps_load.start;
  std::vector<KneeStep> steps;
  std::string why;
  size_t broke = SIZE_MAX;  // the step past the knee, if one was
  for (int i = 0; i < search.max_steps && broke == SIZE_MAX; ++i) {
    Result<api::LoadAnswer> test = run_step(steps_load.at(target));
    if (!test) {
      if (steps.empty()) return test.status();
      why = "step " + std::to_string(i + 1) + " could not run: " + test.status().message();
      break;
    }
    steps.push_back(knee_step(*test, target));
    why = past_knee(steps.size() > 1 ? &steps[steps.size() - 2] : nullptr, steps.back(),
                    search.bounds);
    if (!why.empty()) broke = steps.size() - 1;
    target = next_target(target, search.factor, key == "rate");
  }
  if (broke == SIZE_MAX) broke = steps.size();
  out << render_knee(steps, broke, why, unit);
  json result = {{"unit", unit}, {"steps", json::array()}, {"why", why}};
  for (const KneeStep& s : steps) result["steps"].push_back(step_json(s));
  result["broke"] = broke < steps.size() ? json(broke) : json(nullptr);
  result["highest"] = broke > 0 ? step_json(steps[broke - 1]) : json(nullptr);
  return result;
}

}  // namespace corral::cli
