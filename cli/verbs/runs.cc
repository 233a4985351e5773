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
    auto body = api.get("/loads");
    if (!body) return report_failure(body.status(), api.socket_path());
    auto loads = read_answer("/loads", *body, &api::loads_from_json);
    if (!loads) return fail(loads.status().message());
    if (loads->empty()) return 0;
    std::cout << "\nload tests:\n" << render_loads_table(*loads, style);
    // The daemon lists the newest 200; it keeps up to keep_runs.
    const auto total = body->value("total", static_cast<uint64_t>(loads->size()));
    if (total > loads->size()) {
      std::cout << "(the newest " << loads->size() << " of " << total
                << " load tests: corral show LOAD for any of them)\n";
    }
    return 0;
  }
};

CORRAL_REGISTER_VERB(RunsVerb, "runs", "list recent runs with their counts, and load tests")

}  // namespace
}  // namespace corral::cli
