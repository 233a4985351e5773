// `corral reload`: replaces the workers one at a time (each new one must be ready before the
// next old one goes), so the daemon keeps serving throughout.
#include <chrono>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/verb.h"
#include "cli/workers.h"
#include "config/config.h"

namespace corral::cli {
namespace {

class ReloadVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("--wait-timeout", wait_timeout_,
                   "how long to wait for every worker to be replaced")
        ->capture_default_str();
  }

  int run(const Context& ctx) override {
    auto timeout = config::parse_duration_ms(wait_timeout_);
    if (!timeout) return fail("--wait-timeout: " + timeout.status().message());
    return replace_workers(Api(ctx), "/workers/reload", nlohmann::json::object(), "reloading",
                           std::chrono::milliseconds(*timeout));
  }

 private:
  std::string wait_timeout_ = "60s";
};

CORRAL_REGISTER_VERB(ReloadVerb, "reload", "replace the workers one at a time, without downtime")

}  // namespace
}  // namespace corral::cli
