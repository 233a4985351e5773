// Thresholds: `"latency{step:login}": ["p99 < 200ms", {"threshold": "max < 2s",
// "abort_on_fail": true, "delay": "30s"}]`.
#include <cctype>
#include <charconv>
#include <cmath>

#include "config/load/parse.h"
#include "config/scenario/parse_internal.h"

namespace corral::load {
namespace {

using nlohmann::json;
using scenario::detail::check_fields;
using scenario::detail::fail;
using scenario::detail::field_path;
using scenario::detail::ParseError;
using scenario::detail::read_duration;
using scenario::detail::read_string;
using scenario::detail::shown;
using scenario::detail::trim;

struct MetricName {
  std::string_view name;
  Metric metric;
};
constexpr MetricName kMetrics[] = {
    {"latency", Metric::kLatency},
    {"latency_raw", Metric::kLatencyRaw},
    {"errors", Metric::kErrors},
    {"dropped", Metric::kDropped},
    {"rps", Metric::kRps},
    {"iterations", Metric::kIterations},
    {"ws_latency", Metric::kWsLatency},
    {"ws_errors", Metric::kWsErrors},
};

// "latency{step:login}" -> kLatency and "login".
void read_metric_key(const std::string& key, const std::string& path, Threshold& t) {
  std::string_view name = key;
  if (size_t brace = key.find('{'); brace != std::string::npos) {
    std::string_view filter = std::string_view(key).substr(brace);
    name = std::string_view(key).substr(0, brace);
    if (filter.size() < 8 || filter.substr(0, 6) != "{step:" || filter.back() != '}') {
      fail(path, "expected a filter like {step:NAME}");
    }
    t.step = std::string(filter.substr(6, filter.size() - 7));
    if (name == "rps" || name == "dropped" || name == "iterations") {
      fail(path, "\"" + std::string(name) + "\" counts whole iterations: it has no step filter");
    }
  }
  for (const MetricName& m : kMetrics) {
    if (m.name == name) {
      t.metric = m.metric;
      return;
    }
  }
  fail(path,
       "unknown metric (known: latency, latency_raw, errors, dropped, rps, iterations, "
       "ws_latency, ws_errors)");
}

bool read_double(std::string_view text, double& out) {
  auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size() && std::isfinite(out) &&
         out >= 0;
}

// "p99", "p(99.9)", "max", ... for `metric`.
void read_aggregate(std::string_view agg, const std::string& path, Threshold& t) {
  const bool latency = is_latency(t.metric);
  if (agg.empty()) {
    if (t.metric == Metric::kRps) return;  // kValue
    if (t.metric == Metric::kIterations) {
      t.aggregate = Aggregate::kCount;
      return;
    }
    fail(path, latency ? "expected an aggregate: p50, p99, p99.9, min, max or mean"
                       : "expected an aggregate: rate or count");
  }
  if (latency && agg.size() > 1 && agg[0] == 'p') {
    std::string_view n = agg.substr(1);
    if (n.size() > 2 && n.front() == '(' && n.back() == ')') n = n.substr(1, n.size() - 2);
    if (!read_double(n, t.percentile) || t.percentile <= 0 || t.percentile > 100) {
      fail(path, "expected a percentile from p0.001 to p100, got \"" + std::string(agg) + "\"");
    }
    t.aggregate = Aggregate::kPercentile;
    return;
  }
  struct Named {
    std::string_view name;
    Aggregate aggregate;
    bool for_latency;
  };
  constexpr Named kNamed[] = {{"min", Aggregate::kMin, true},    {"max", Aggregate::kMax, true},
                              {"mean", Aggregate::kMean, true},  {"avg", Aggregate::kMean, true},
                              {"rate", Aggregate::kRate, false}, {"count", Aggregate::kCount, false}};
  const bool counted =
      is_errors(t.metric) || t.metric == Metric::kDropped || t.metric == Metric::kIterations;
  for (const Named& n : kNamed) {
    if (n.name != agg) continue;
    bool fits = latency ? n.for_latency
                        : counted && (n.aggregate == Aggregate::kCount ||
                                      (n.aggregate == Aggregate::kRate &&
                                       t.metric != Metric::kIterations));
    if (!fits) break;
    t.aggregate = n.aggregate;
    return;
  }
  fail(path, "\"" + std::string(agg) + "\" does not apply to this metric");
}

// The bound, in the unit Threshold::bound documents.
void read_bound(std::string_view text, const std::string& path, Threshold& t) {
  if (text.empty()) fail(path, "has no bound");
  if (t.aggregate == Aggregate::kRate) {
    bool percent = text.back() == '%';
    if (percent) text.remove_suffix(1);
    if (!read_double(trim(text), t.bound) || (!percent && t.bound > 1) || t.bound > 100) {
      fail(path, "expected a rate like \"1%\" or 0.01");
    }
    if (percent) t.bound /= 100;
    return;
  }
  if (is_latency(t.metric)) {
    size_t unit = text.find_first_not_of("0123456789.");
    std::string_view suffix = unit == std::string_view::npos ? "" : trim(text.substr(unit));
    double factor = suffix == "us" || suffix == "µs" ? 1
                    : suffix == "ms"                 ? 1000
                    : suffix == "s"                  ? 1e6
                                                     : 0;
    if (factor == 0 || !read_double(text.substr(0, unit), t.bound)) {
      fail(path, "expected a duration like 200ms, 1.5s or 800us, got \"" + std::string(text) + "\"");
    }
    t.bound *= factor;
    return;
  }
  if (!read_double(text, t.bound)) fail(path, "expected a number, got \"" + std::string(text) + "\"");
}

void read_expression(const std::string& text, const std::string& path, Threshold& t) {
  std::string_view s = trim(text);
  size_t op = s.find_first_of("<>");
  if (op == std::string_view::npos) fail(path, "expected a comparison like \"p99 < 200ms\"");
  read_aggregate(trim(s.substr(0, op)), path, t);
  bool or_equal = op + 1 < s.size() && s[op + 1] == '=';
  t.op = s[op] == '<' ? (or_equal ? Op::kLessEqual : Op::kLess)
                      : (or_equal ? Op::kGreaterEqual : Op::kGreater);
  read_bound(trim(s.substr(op + (or_equal ? 2 : 1))), path, t);
}

}  // namespace

std::string_view to_string(Metric metric) {
  for (const MetricName& m : kMetrics) {
    if (m.metric == metric) return m.name;
  }
  return "?";
}

bool is_latency(Metric metric) {
  return metric == Metric::kLatency || metric == Metric::kLatencyRaw ||
         metric == Metric::kWsLatency;
}

bool is_errors(Metric metric) { return metric == Metric::kErrors || metric == Metric::kWsErrors; }

bool compare(double value, Op op, double bound) {
  switch (op) {
    case Op::kLess:
      return value < bound;
    case Op::kLessEqual:
      return value <= bound;
    case Op::kGreater:
      return value > bound;
    case Op::kGreaterEqual:
      return value >= bound;
  }
  return false;
}

bool Threshold::holds(double value) const { return compare(value, op, bound); }

Result<Threshold> parse_threshold(const std::string& metric_key, const nlohmann::json& item,
                                  const std::string& path) {
  try {
    Threshold t;
    read_metric_key(metric_key, path, t);
    std::string expression;
    if (item.is_string()) {
      expression = item.get<std::string>();
    } else {
      check_fields(item, path, {"threshold", "abort_on_fail", "delay"});
      if (!item.contains("threshold")) fail(path, "missing \"threshold\"");
      expression = read_string(item["threshold"], field_path(path, "threshold"));
      if (item.contains("abort_on_fail")) {
        if (!item["abort_on_fail"].is_boolean()) {
          fail(field_path(path, "abort_on_fail"), "expected true or false, got " +
                                                      shown(item["abort_on_fail"]));
        }
        t.abort_on_fail = item["abort_on_fail"].get<bool>();
      }
      if (item.contains("delay")) t.delay_ms = read_duration(item["delay"], field_path(path, "delay"));
    }
    read_expression(expression, path, t);
    t.name = metric_key + ": " + std::string(trim(expression));
    return t;
  } catch (const ParseError& e) {
    return invalid_argument(e.message);
  }
}

}  // namespace corral::load
