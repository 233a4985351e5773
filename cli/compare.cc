#include "cli/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cli/format.h"
#include "cli/load_view.h"

namespace corral::cli {
namespace {

// A metric a comparison reads off a test: how, which way is worse, and how it prints.
struct MetricDef {
  const char* name;
  bool rises_worse;  // latency, errors, dropped, RSS; rps falls worse
  bool rate;         // a fraction: changes are in points, not in percent
  std::optional<double> (*get)(const api::LoadAnswer&);
  std::string (*text)(double);
};

std::optional<double> latency(const api::Latency& l, double api::Latency::*field) {
  if (l.count == 0) return std::nullopt;
  return l.*field;
}

std::string latency_value(double ms) { return latency_text(ms); }
std::string rate_value(double v) { return fixed(v, 1); }
std::string count_value(double v) { return fixed(v, 0); }
std::string bytes_value(double v) { return human_bytes(static_cast<uint64_t>(v)); }

#define CORRAL_LATENCY(name, of, field)                                               \
  MetricDef {                                                                         \
    name, true, false,                                                                \
        [](const api::LoadAnswer& a) { return latency(a.of, &api::Latency::field); }, \
        latency_value                                                                 \
  }

const MetricDef kMetrics[] = {
    {"rps", false, false, [](const api::LoadAnswer& a) -> std::optional<double> { return a.rps; },
     rate_value},
    CORRAL_LATENCY("p50", latency, p50),
    CORRAL_LATENCY("p90", latency, p90),
    CORRAL_LATENCY("p99", latency, p99),
    CORRAL_LATENCY("p99.9", latency, p999),
    CORRAL_LATENCY("raw_p50", latency_raw, p50),
    CORRAL_LATENCY("raw_p90", latency_raw, p90),
    CORRAL_LATENCY("raw_p99", latency_raw, p99),
    CORRAL_LATENCY("raw_p99.9", latency_raw, p999),
    {"errors", true, true,
     [](const api::LoadAnswer& a) -> std::optional<double> { return a.errors.rate; }, percent},
    {"dropped", true, false,
     [](const api::LoadAnswer& a) -> std::optional<double> {
       return static_cast<double>(a.iterations.dropped);
     },
     count_value},
    {"rss_peak", true, false,
     [](const api::LoadAnswer& a) -> std::optional<double> {
       if (!a.target) return std::nullopt;
       if (a.target->process) return static_cast<double>(a.target->process->rss_peak);
       return a.target->rss_max > 0 ? std::optional<double>(a.target->rss_max) : std::nullopt;
     },
     bytes_value},
};

#undef CORRAL_LATENCY

const MetricDef* find_metric(std::string_view name) {
  for (const MetricDef& m : kMetrics) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// How much worse `test` is than `base`, the metric's bad way.
double worse_by(const MetricDef& m, double base, double test) {
  double delta = m.rises_worse ? test - base : base - test;
  if (m.rate) return delta * 100;
  if (base == 0) return delta > 0 ? std::numeric_limits<double>::infinity() : 0;
  return delta / base * 100;
}

// The change as it reads: "+20.0%", "-3.1%", "+0.50 pt", "new".
std::string change_text(const MetricDef& m, double base, double test) {
  if (m.rate) return (test >= base ? "+" : "") + fixed((test - base) * 100, 2) + " pt";
  if (base == 0) return test == 0 ? "0.0%" : "new";
  double pct = (test - base) / base * 100;
  return (pct >= 0 ? "+" : "") + fixed(pct, 1) + "%";
}

std::string limit_text(const MetricDef& m, const RegressionLimit& l) {
  return std::string(m.rises_worse ? "+" : "-") + fixed(l.percent, l.percent < 1 ? 2 : 0) +
         (m.rate ? " pt" : "%");
}

std::string side_text(const MetricDef& m, double mid, double low, double high, size_t n) {
  if (n < 2) return m.text(mid);
  return m.text(mid) + " (" + m.text(low) + "–" + m.text(high) + ")";
}

std::string ids_text(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : ",") + id;
  return out;
}

}  // namespace

std::vector<std::string> comparison_metrics() {
  std::vector<std::string> out;
  for (const MetricDef& m : kMetrics) out.emplace_back(m.name);
  return out;
}

Result<RegressionLimit> parse_regression(std::string_view text) {
  const std::string given(text);
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return invalid_argument("--max-regression \"" + given +
                            "\": expected METRIC: +N% (for example \"p99: +10%\")");
  }
  std::string name(trim(text.substr(0, colon)));
  const MetricDef* m = find_metric(name);
  if (m == nullptr) {
    std::string known;
    for (const std::string& k : comparison_metrics()) known += (known.empty() ? "" : ", ") + k;
    return invalid_argument("--max-regression \"" + given + "\": no metric \"" + name +
                            "\"; one of " + known);
  }
  std::string_view value = trim(text.substr(colon + 1));
  const char bad = m->rises_worse ? '+' : '-';
  if (value.size() < 3 || value.front() != bad || value.back() != '%') {
    return invalid_argument("--max-regression \"" + given + "\": " + name + " regresses as it " +
                            (m->rises_worse ? "rises" : "falls") + ": expected " + name + ": " +
                            bad + "N%");
  }
  std::string number(value.substr(1, value.size() - 2));
  char* end = nullptr;
  double pct = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !(pct >= 0) || !std::isfinite(pct)) {
    return invalid_argument("--max-regression \"" + given + "\": \"" + number +
                            "\" is not a percentage");
  }
  return RegressionLimit{name, pct, name + ": " + bad + number + "%"};
}

std::vector<RegressionLimit> default_regressions() {
  std::vector<RegressionLimit> out;
  for (const char* text : {"rps: -5%", "p50: +10%", "p90: +10%", "p99: +10%", "errors: +1%"}) {
    out.push_back(*parse_regression(text));
  }
  return out;
}

Result<std::vector<RegressionLimit>> parse_regressions(const std::vector<std::string>& texts) {
  if (texts.empty()) return default_regressions();
  std::vector<RegressionLimit> out;
  for (const std::string& text : texts) {
    auto limit = parse_regression(text);
    if (!limit) return limit.status();
    out.push_back(std::move(*limit));
  }
  return out;
}

bool Comparison::regressed() const {
  return std::any_of(metrics.begin(), metrics.end(),
                     [](const MetricChange& m) { return m.regressed(); });
}

Comparison compare_loads(const std::vector<api::LoadAnswer>& base,
                         const std::vector<api::LoadAnswer>& tests,
                         std::vector<RegressionLimit> limits) {
  Comparison c;
  for (const auto& t : base) c.base_ids.push_back(t.id);
  for (const auto& t : tests) c.test_ids.push_back(t.id);
  c.limits = std::move(limits);
  for (const MetricDef& m : kMetrics) {
    std::vector<double> b, t;
    for (const auto& x : base) {
      if (auto v = m.get(x)) b.push_back(*v);
    }
    for (const auto& x : tests) {
      if (auto v = m.get(x)) t.push_back(*v);
    }
    if (b.size() != base.size() || t.size() != tests.size() || b.empty() || t.empty()) continue;
    MetricChange mc;
    mc.metric = m.name;
    mc.base = median(b);
    mc.test = median(t);
    std::tie(mc.base_low, mc.base_high) =
        std::pair(*std::min_element(b.begin(), b.end()), *std::max_element(b.begin(), b.end()));
    std::tie(mc.test_low, mc.test_high) =
        std::pair(*std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end()));
    mc.worse_by = worse_by(m, mc.base, mc.test);
    for (const RegressionLimit& l : c.limits) {
      if (l.metric == mc.metric) mc.limit = l;
    }
    if (mc.limit && mc.worse_by > mc.limit->percent) {
      mc.crossed = true;
      mc.within_spread = b.size() > 1 && t.size() > 1 && mc.test_low <= mc.base_high &&
                         mc.base_low <= mc.test_high;
    }
    c.metrics.push_back(mc);
  }
  return c;
}

std::string render_comparison(const Comparison& c, TableStyle style) {
  std::vector<std::vector<std::string>> rows;
  std::string regressions;
  for (const MetricChange& mc : c.metrics) {
    const MetricDef& m = *find_metric(mc.metric);
    std::string verdict = !mc.limit          ? ""
                          : !mc.crossed      ? "ok"
                          : mc.within_spread ? "within spread"
                                             : "REGRESSED";
    rows.push_back({mc.metric, side_text(m, mc.base, mc.base_low, mc.base_high, c.base_ids.size()),
                    side_text(m, mc.test, mc.test_low, mc.test_high, c.test_ids.size()),
                    change_text(m, mc.base, mc.test), mc.limit ? limit_text(m, *mc.limit) : "",
                    verdict});
    if (mc.crossed) {
      regressions += (mc.within_spread ? "within the spread: " : "regressed: ") + mc.limit->text +
                     " — " + m.text(mc.base) + " → " + m.text(mc.test) + " (" +
                     change_text(m, mc.base, mc.test) + ")" +
                     (mc.within_spread ? ", but the tests' spreads overlap" : "") + "\n";
    }
  }
  std::string out = render_table({"metric", "baseline " + ids_text(c.base_ids),
                                  "test " + ids_text(c.test_ids), "change", "limit", "verdict"},
                                 rows, style);
  out += regressions;
  out += c.regressed() ? "verdict: regressed\n" : "verdict: no regression\n";
  return out;
}

std::vector<JunitCase> comparison_cases(const Comparison& c, const std::string& suite,
                                        double seconds) {
  std::vector<JunitCase> cases;
  for (const MetricChange& mc : c.metrics) {
    if (!mc.limit) continue;
    const MetricDef& m = *find_metric(mc.metric);
    JunitCase tc;
    tc.classname = suite + ".baseline";
    tc.name = mc.limit->text;
    tc.seconds = seconds;
    if (mc.regressed()) {
      tc.outcome = JunitCase::Outcome::kFailed;
      tc.message = mc.metric + " went from " + m.text(mc.base) + " to " + m.text(mc.test) + " (" +
                   change_text(m, mc.base, mc.test) + "), past " + limit_text(m, *mc.limit);
      tc.detail = tc.message + " against baseline " + ids_text(c.base_ids);
    }
    cases.push_back(std::move(tc));
  }
  return cases;
}

}  // namespace corral::cli
