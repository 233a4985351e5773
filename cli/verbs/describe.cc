// `corral describe SLOT`: every field of one worker, like `pm2 describe`.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/status_view.h"
#include "cli/verb.h"
#include "cli/workers.h"

namespace corral::cli {
namespace {

class DescribeVerb : public Verb {
 public:
  void setup(CLI::App& app) override { app.add_option("slot", slot_, "worker slot")->required(); }

  int run(const Context& ctx) override {
    const Api api(ctx);
    auto workers = get_workers(api);
    if (!workers) return report_failure(workers.status(), api.socket_path());
    for (const api::WorkerEntry& w : workers->workers) {
      if (w.slot == slot_) {
        std::cout << render_worker_description(w, WallClock::now());
        return 0;
      }
    }
    return fail("no worker slot " + std::to_string(slot_));
  }

 private:
  long slot_ = 0;
};

CORRAL_REGISTER_VERB(DescribeVerb, "describe", "show every field of one worker")

}  // namespace
}  // namespace corral::cli
