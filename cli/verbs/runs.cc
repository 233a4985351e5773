// `corral runs`: recent runs and their counts.
#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/runs_view.h"
#include "cli/verb.h"

namespace corral::cli {
namespace {

class RunsVerb : public Verb {
 public:
  void setup(CLI::App&) override {}
  int run(const Context& ctx) override {
    const Api api(ctx);
    auto answer = api.get("/runs");
    if (!answer) return report_failure(answer.status(), api.socket_path());
    const TableStyle style = ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii;
    std::cout << render_runs_table(json_field(*answer, "runs"), style);
    return 0;
  }
};

CORRAL_REGISTER_VERB(RunsVerb, "runs", "list recent runs with their counts")

}  // namespace
}  // namespace corral::cli
