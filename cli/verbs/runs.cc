// `corral runs`: recent runs and their counts, then the daemon's load tests.
#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/load_view.h"
#include "cli/runs_view.h"
#include "cli/verb.h"

namespace corral::cli {
namespace {

class RunsVerb : public Verb {
 public:
  void setup(CLI::App&) override {}
  int run(const Context& ctx) override {
    const Api api(ctx);
    auto answer = get_answer(api, "/runs", &api::runs_from_json);
    if (!answer) return report_failure(answer.status(), api.socket_path());
    const TableStyle style = ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii;
    std::cout << render_runs_table(answer->runs, style);
    auto loads = get_answer(api, "/loads", &api::loads_from_json);
    if (!loads) return report_failure(loads.status(), api.socket_path());
    if (!loads->empty()) std::cout << "\nload tests:\n" << render_loads_table(*loads, style);
    return 0;
  }
};

CORRAL_REGISTER_VERB(RunsVerb, "runs", "list recent runs with their counts, and load tests")

}  // namespace
}  // namespace corral::cli
