// `corral jlist`: GET /workers as one line of JSON, for scripts (like `pm2 jlist`).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/verb.h"

namespace corral::cli {
namespace {

class JlistVerb : public Verb {
 public:
  void setup(CLI::App&) override {}
  int run(const Context& ctx) override {
    const Api api(ctx);
    auto workers = api.get("/workers");
    if (!workers) return report_failure(workers.status(), api.socket_path());
    std::cout << workers->dump() << "\n";
    return 0;
  }
};

CORRAL_REGISTER_VERB(JlistVerb, "jlist", "print the workers as one line of JSON")

}  // namespace
}  // namespace corral::cli
