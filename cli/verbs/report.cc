// `corral report LOAD [--html FILE] [--junit FILE] [--out FILE]`: writes the reports of a load
// test the daemon keeps (or of a file --out wrote) again, as `corral load` wrote them when it
// ended; with no file named, prints its summary. Exits 0 once they are written, 1 when one
// cannot be, 2 for bad flags or an unknown test, 3 when no daemon runs.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/load_reports.h"
#include "cli/load_view.h"
#include "cli/verb.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

class ReportVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("load", ref_, "a load test's id (corral runs lists them), or a file --out wrote")
        ->required();
    app.add_option("--html", reports_.html, "a report with charts, as one HTML file")
        ->type_name("FILE");
    app.add_option("--junit", reports_.junit, "its thresholds as a JUnit XML report")
        ->type_name("FILE");
    app.add_option("--out", reports_.out, "its summary and series as JSON")->type_name("FILE");
  }

  int run(const Context& ctx) override {
    const Api api(ctx);
    auto record = load_record(api, ref_);
    if (!record) {
      if (record.status().code() == Code::kUnavailable) {
        return report_failure(record.status(), api.socket_path());
      }
      return usage_error(record.status().message());
    }
    if (record->test.state == "running") {
      return usage_error("load test " + record->test.id + " is still running");
    }
    if (!reports_.any()) {
      std::cout << render_load_summary(record->test);
      return 0;
    }
    if (std::string e = write_load_reports(reports_, *record, {}, std::cout); !e.empty()) {
      return fail(e);
    }
    return 0;
  }

 private:
  std::string ref_;
  LoadReports reports_;
};

CORRAL_REGISTER_VERB(ReportVerb, "report",
                     "write a kept load test's HTML, JUnit or JSON report again")

}  // namespace
}  // namespace corral::cli
