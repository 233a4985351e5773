// `corral scale N`: changes the number of workers and waits until N are ready.
#include <chrono>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/verb.h"
#include "cli/workers.h"
#include "config/config.h"

namespace corral::cli {
namespace {

class ScaleVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("workers", workers_, "the number of workers wanted")->required();
  }

  int run(const Context& ctx) override {
    const Api api(ctx);
    auto answer = api.post("/workers/scale", {{"workers", workers_}});
    if (!answer) return report_failure(answer.status(), api.socket_path());
    // The daemon answers with the count it settled on (which may differ, e.g. for 0 = per CPU).
    const auto wanted = static_cast<long>(json_number(*answer, "workers", workers_));
    std::cout << "corral: scaling to " << counted(wanted, "worker", "workers") << "\n";
    if (wanted == 0) {
      std::cerr << "corral: note: with 0 workers nothing runs; runs wait in the queue until you "
                   "scale up\n";
    } else if (const long cpus = config::usable_cpus(); wanted > cpus) {
      std::cerr << "corral: note: " << counted(wanted, "worker", "workers") << " on "
                << counted(cpus, "usable CPU", "usable CPUs")
                << ": more workers than CPUs share them; one per CPU is the default\n";
    }
    auto done = wait_for_workers(
        api, [&](const Workers& list) { return count_in_state(list, "ready") == wanted; },
        std::chrono::seconds(10));
    if (!done) return report_failure(done.status(), api.socket_path());
    if (int rc = print_status(api); rc != 0) return rc;
    if (!*done) return fail("not " + std::to_string(wanted) + " workers ready after 10s");
    return 0;
  }

 private:
  long workers_ = 0;
};

CORRAL_REGISTER_VERB(ScaleVerb, "scale", "change the number of workers")

}  // namespace
}  // namespace corral::cli
