// `corral restart [SLOT]`: replaces all workers at once, or one.
#include <chrono>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/verb.h"
#include "cli/workers.h"

namespace corral::cli {
namespace {

class RestartVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    slot_option_ = app.add_option("slot", slot_, "only this worker slot");
  }

  int run(const Context& ctx) override {
    nlohmann::json body = nlohmann::json::object();
    if (slot_option_->count() > 0) body["slot"] = slot_;
    return replace_workers(Api(ctx), "/workers/restart", body, "restarting",
                           std::chrono::seconds(10));
  }

 private:
  int slot_ = 0;
  CLI::Option* slot_option_ = nullptr;
};

CORRAL_REGISTER_VERB(RestartVerb, "restart", "restart every worker, or one slot")

}  // namespace
}  // namespace corral::cli
