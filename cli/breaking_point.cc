#include "cli/breaking_point.h"

#include <algorithm>
#include <cmath>

#include "cli/format.h"
#include "cli/load_view.h"

namespace corral::cli {
namespace {

using nlohmann::json;

// The load of the last complete second when the target died or crossed a stop_when: in the
// search's unit (connections, VUs, or requests per second for a rate); -1 when it did neither.
double load_at_event(const api::LoadAnswer& test, const std::string& key) {
  if (!test.target || !test.target->event.is_object()) return -1;
  const json load = test.target->event.value("load", json::object());
  const char* field = key == "connections" ? "connections" : key == "vus" ? "vus" : "rps";
  auto it = load.find(field);
  return it != load.end() && it->is_number() ? it->get<double>() : -1;
}

std::string amount(double v) { return fixed(v, v == std::floor(v) ? 0 : 1); }

// The search's state: the highest load that held and the lowest that failed (0: none yet).
struct Bracket {
  double holds = 0, fails = 0;
  int failed_runs = 0, runs_at_fail = 0;  // at `fails`
  std::vector<double> deaths;             // at `fails`: the load when the target gave out
};

}  // namespace

std::string probe_failure(const api::LoadAnswer& test) {
  if (test.state == "passed") return "";
  if (test.target && test.target->event.is_object()) {
    const json& e = test.target->event;
    if (e.value("event", "") == "died") return "the target " + e.value("how", "was gone");
    if (e.value("event", "") == "crossed") return "crossed " + e.value("condition", "stop_when");
  }
  // It ran out of memory as it was stopped: it gave out all the same.
  if (test.target && test.target->process && test.target->process->cause) {
    return "the target ran out of memory: " + *test.target->process->cause;
  }
  std::string crossed;
  for (const api::ThresholdOutcome& t : test.thresholds) {
    if (!t.ok) crossed += (crossed.empty() ? "" : ", ") + t.name;
  }
  if (!crossed.empty()) return "crossed " + crossed;
  return test.state + (test.reason.empty() ? "" : ": " + test.reason);
}

Result<json> find_breaking_point(
    json load, const BisectSearch& search,
    const std::function<Result<api::LoadAnswer>(const json&)>& run_probe, std::ostream& out) {
  // A staged section starts at its highest stage: the load it was written to reach.
  double peak = 0;
  for (const json& stage : load.value("stages", json::array())) {
    if (stage.is_object() && stage.value("target", json()).is_number()) {
      peak = std::max(peak, stage["target"].get<double>());
    }
  }
  StepLoad steps = step_load(std::move(load), search.duration, search.bounds);
  if (peak > 0) steps.start = peak;
  const bool fractional = steps.key == "rate";
  Bracket b;
  json probes = json::array();
  std::string error;
  // `repeat` probes at `target`; it fails when any of them does.
  auto probe_at = [&](double target) {
    int failed = 0, runs = 0;
    std::vector<double> deaths;
    for (int i = 0; i < search.repeat && static_cast<int>(probes.size()) < search.max_probes; ++i) {
      Result<api::LoadAnswer> test = run_probe(steps.at(target));
      if (!test) {
        error = test.status().message();
        return false;
      }
      ++runs;
      const std::string why = probe_failure(*test);
      json p = {{"target", target}, {"test", test->id}, {"failed", !why.empty()}, {"why", why}};
      if (double d = load_at_event(*test, steps.key); d >= 0) {
        p["at_death"] = d;
        deaths.push_back(d);
      }
      out << "probe " << probes.size() + 1 << ": " << amount(target) << " " << steps.unit << "  "
          << (why.empty() ? "held" : "failed: " + why)
          << (p.contains("at_death") ? " (under " + amount(p["at_death"]) + ")" : "") << "  "
          << test->id << "\n"
          << std::flush;
      probes.push_back(std::move(p));
      failed += why.empty() ? 0 : 1;
    }
    if (failed > 0) {
      b = {b.holds, target, failed, runs, deaths};
    } else {
      b.holds = target;
    }
    return true;
  };
  double target = steps.start;
  while (b.fails == 0 && static_cast<int>(probes.size()) < search.max_probes) {
    if (!probe_at(target)) break;
    target = next_target(target, search.factor, fractional);
  }
  for (;;) {
    if (!error.empty() || b.fails == 0) break;
    if (static_cast<int>(probes.size()) + search.repeat > search.max_probes) break;
    const double middle = (b.holds + b.fails) / 2;
    if (b.holds > 0 && (b.fails - b.holds) / 2 <= search.precision * middle) break;
    const double next = fractional ? middle : std::round(middle);
    if (next <= b.holds || next >= b.fails) break;  // no whole load between them
    if (!probe_at(next)) break;
  }
  if (!error.empty() && probes.empty()) return Status(Code::kUnavailable, error);
  json result = {{"unit", steps.unit},
                 {"probes", probes},
                 {"holds", b.holds > 0 ? json(b.holds) : json(nullptr)},
                 {"fails", b.fails > 0 ? json(b.fails) : json(nullptr)},
                 {"why", error}};
  if (b.fails == 0) {
    out << "no breaking point up to " << amount(b.holds) << " " << steps.unit << " ("
        << probes.size() << " probes" << (error.empty() ? "" : "; " + error) << ")\n";
    return result;
  }
  const double middle = (b.holds + b.fails) / 2;
  result["estimate"] = middle;
  result["precision"] = (b.fails - b.holds) / 2 / middle;
  out << "breaking point: " << amount(middle) << " " << steps.unit << " ±"
      << fixed(100 * (b.fails - b.holds) / 2 / middle, 1) << " %, after " << probes.size()
      << " probes\n  fails at " << amount(b.fails) << " in " << b.failed_runs << " of "
      << b.runs_at_fail << " probes";
  if (!b.deaths.empty()) {
    auto [lo, hi] = std::minmax_element(b.deaths.begin(), b.deaths.end());
    out << " (under " << amount(*lo) << (*hi > *lo ? "–" + amount(*hi) : "") << " " << steps.unit
        << " when it gave out)";
  }
  out << "\n  " << (b.holds > 0 ? "holds at " + amount(b.holds) : std::string("nothing held"))
      << (error.empty() ? "" : "\n  stopped: " + error) << "\n";
  return result;
}

}  // namespace corral::cli
