// corral compare (cli/compare.h): limits as written, metrics side by side, and which change is a
// regression, with and without repeats.
#include <catch2/catch.hpp>

#include "cli/compare.h"

using corral::api::LoadAnswer;
using corral::cli::compare_loads;
using corral::cli::Comparison;
using corral::cli::comparison_cases;
using corral::cli::default_regressions;
using corral::cli::JunitCase;
using corral::cli::MetricChange;
using corral::cli::parse_regression;
using corral::cli::render_comparison;
using corral::cli::TableStyle;

namespace {

// A test of `rps` requests a second whose latency is `ms` at every percentile.
LoadAnswer test(const std::string& id, double rps, double ms, double errors = 0) {
  LoadAnswer a;
  a.id = id;
  a.name = "api";
  a.state = "passed";
  a.rps = rps;
  a.latency = {1000, ms, ms, ms, ms, ms, ms, ms, ms};
  a.latency_raw = a.latency;
  a.errors.rate = errors;
  return a;
}

const MetricChange& metric(const Comparison& c, const std::string& name) {
  for (const MetricChange& m : c.metrics) {
    if (m.metric == name) return m;
  }
  FAIL("no metric " << name);
  throw;
}

}  // namespace

TEST_CASE("compare: limits parse in the metric's bad direction, and mistakes are named") {
  auto p99 = parse_regression("p99: +10%");
  REQUIRE(p99);
  CHECK(p99->metric == "p99");
  CHECK(p99->percent == 10);
  CHECK(parse_regression(" rps :-5.5% ")->percent == 5.5);
  CHECK(parse_regression("p99: -10%").status().message() ==
        "--max-regression \"p99: -10%\": p99 regresses as it rises: expected p99: +N%");
  CHECK(parse_regression("rps: +5%").status().message() ==
        "--max-regression \"rps: +5%\": rps regresses as it falls: expected rps: -N%");
  CHECK_THAT(
      parse_regression("p98: +1%").status().message(),
      Catch::StartsWith("--max-regression \"p98: +1%\": no metric \"p98\"; one of rps, p50,"));
  CHECK(parse_regression("p99 +10%").status().message() ==
        "--max-regression \"p99 +10%\": expected METRIC: +N% (for example \"p99: +10%\")");
  CHECK(parse_regression("p99: +ten%").status().message() ==
        "--max-regression \"p99: +ten%\": \"ten\" is not a percentage");
  CHECK(default_regressions().size() == 5);
}

TEST_CASE("compare: a 20% slower test regresses p50, p90 and p99, an unchanged one does not") {
  Comparison same =
      compare_loads({test("l1", 1000, 10)}, {test("l2", 990, 10.4)}, default_regressions());
  CHECK_FALSE(same.regressed());
  CHECK(metric(same, "p99").worse_by == Approx(4.0));
  CHECK(metric(same, "rps").worse_by == Approx(1.0));
  Comparison slower =
      compare_loads({test("l1", 1000, 10)}, {test("l3", 1000, 12)}, default_regressions());
  CHECK(slower.regressed());
  for (const char* name : {"p50", "p90", "p99"}) CHECK(metric(slower, name).regressed());
  CHECK_FALSE(metric(slower, "rps").crossed);
  CHECK_FALSE(metric(slower, "raw_p99").limit);  // no limit on it by default
  const std::string table = render_comparison(slower, TableStyle::kAscii);
  INFO(table);
  CHECK_THAT(table, Catch::Contains(
                        "| p99       | 10.0ms      | 12.0ms  | +20.0%   | +10%  | REGRESSED |"));
  CHECK_THAT(table, Catch::Contains("regressed: p99: +10% — 10.0ms → 12.0ms (+20.0%)\n"));
  CHECK_THAT(table, Catch::EndsWith("verdict: regressed\n"));
  CHECK_THAT(render_comparison(same, TableStyle::kAscii),
             Catch::EndsWith("verdict: no regression\n"));
}

TEST_CASE("compare: errors are judged in points of the rate, and from none to some") {
  auto limits = {*parse_regression("errors: +1%"), *parse_regression("dropped: +0%")};
  LoadAnswer base = test("l1", 100, 5, 0.001);
  LoadAnswer worse = test("l2", 100, 5, 0.02);
  worse.iterations.dropped = 3;
  Comparison c = compare_loads({base}, {worse}, limits);
  CHECK(metric(c, "errors").worse_by == Approx(1.9));
  CHECK(metric(c, "errors").regressed());
  CHECK(metric(c, "dropped").worse_by == std::numeric_limits<double>::infinity());
  CHECK(metric(c, "dropped").regressed());
  CHECK_THAT(render_comparison(c, TableStyle::kAscii), Catch::Contains("| +1.90 pt |"));
}

TEST_CASE("compare: with repeats on both sides, a change within their spread is not a regression") {
  auto limits = {*parse_regression("p99: +10%")};
  // Medians 10 and 11.5 (+15%), but the spreads 9–12 and 10–13 overlap.
  Comparison noisy =
      compare_loads({test("a1", 1, 9), test("a2", 1, 10), test("a3", 1, 12)},
                    {test("b1", 1, 10), test("b2", 1, 11.5), test("b3", 1, 13)}, limits);
  CHECK(metric(noisy, "p99").crossed);
  CHECK(metric(noisy, "p99").within_spread);
  CHECK_FALSE(noisy.regressed());
  CHECK_THAT(render_comparison(noisy, TableStyle::kAscii),
             Catch::Contains("10.0ms (9.00ms–12.0ms)") && Catch::Contains("within spread"));
  Comparison clear = compare_loads({test("a1", 1, 9), test("a2", 1, 10)},
                                   {test("b1", 1, 12.5), test("b2", 1, 13)}, limits);
  CHECK(clear.regressed());
}

TEST_CASE("compare: a JUnit case per limit, failed with the values when it regressed") {
  Comparison c =
      compare_loads({test("l1", 1000, 10)}, {test("l3", 1000, 12)}, default_regressions());
  std::vector<JunitCase> cases = comparison_cases(c, "api", 30);
  REQUIRE(cases.size() == 5);
  CHECK(cases[0].name == "rps: -5%");
  CHECK(cases[0].outcome == JunitCase::Outcome::kPassed);
  CHECK(cases[3].name == "p99: +10%");
  CHECK(cases[3].classname == "api.baseline");
  CHECK(cases[3].outcome == JunitCase::Outcome::kFailed);
  CHECK(cases[3].message == "p99 went from 10.0ms to 12.0ms (+20.0%), past +10%");
}
