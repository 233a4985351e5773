// `corral compare BASE TEST [--max-regression 'p99: +10%' ...] [--junit FILE]`: two load tests
// side by side (cli/compare.h), each a kept test's id or a file --out wrote; several tests
// joined by commas are repeats of one, compared by their medians and spreads. Exits 0 when no
// metric regressed past its limit, 1 when one did, 2 for bad flags or an unknown test, 3 when
// no daemon runs.
#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/compare.h"
#include "cli/load_reports.h"
#include "cli/verb.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

class CompareVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("base", base_,
                   "the baseline: a kept test's id or a file --out wrote; "
                   "repeats joined by commas")
        ->required();
    app.add_option("test", test_, "the test to judge, named the same way")->required();
    app.add_option("--max-regression", limits_,
                   "how far a metric may regress, e.g. 'p99: +10%', 'rps: -5%', "
                   "'errors: +1%' (points of the rate); repeatable; default: rps -5%, "
                   "p50/p90/p99 +10%, errors +1 point")
        ->type_name("'METRIC: ±N%'");
    app.add_option("--junit", junit_, "a JUnit XML report: a test case per limit")
        ->type_name("FILE");
  }

  int run(const Context& ctx) override {
    auto limits = parse_regressions(limits_);
    if (!limits) return usage_error(limits.status().message());
    const Api api(ctx);
    auto base = load_records(api, base_);
    if (!base) return refused(base.status(), api);
    auto test = load_records(api, test_);
    if (!test) return refused(test.status(), api);
    Comparison c = compare_loads(*base, *test, std::move(*limits));
    const TableStyle style = ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii;
    std::cout << render_comparison(c, style);
    if (!junit_.empty()) {
      const api::LoadAnswer& last = test->back();
      auto cases = comparison_cases(c, last.name, last.elapsed_s);
      if (!write_file(junit_, render_junit_suite(last.name + " (" + last.id + ")", last.created,
                                                 last.elapsed_s, cases))) {
        return fail("--junit " + junit_ + ": cannot write the report");
      }
      std::cout << "junit      : " << junit_ << "\n";
    }
    return c.regressed() ? 1 : 0;
  }

 private:
  // A side that cannot be read: no daemon (exit 3), else a bad name (exit 2).
  static int refused(const Status& s, const Api& api) {
    if (s.code() == Code::kUnavailable) return report_failure(s, api.socket_path());
    return usage_error(s.message());
  }

  std::string base_, test_;
  std::vector<std::string> limits_;
  std::string junit_;
};

CORRAL_REGISTER_VERB(CompareVerb, "compare",
                     "compare two load tests metric by metric, and say what regressed")

}  // namespace
}  // namespace corral::cli
