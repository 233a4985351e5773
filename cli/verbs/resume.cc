// `corral resume RUN`: places a quarantined run's instances again (its workers kept dying; see
// docs/guarantees.md).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/verb.h"

namespace corral::cli {
namespace {

class ResumeVerb : public Verb {
 public:
  void setup(CLI::App& app) override { app.add_option("run", run_, "run id")->required(); }
  int run(const Context& ctx) override {
    const Api api(ctx);
    auto answer = api.post("/runs/" + run_ + "/resume", nlohmann::json::object());
    if (!answer) return report_failure(answer.status(), api.socket_path());
    std::cout << "corral: run " << run_ << ": resumed (" << json_string(*answer, "state") << ")\n";
    return 0;
  }

 private:
  std::string run_;
};

CORRAL_REGISTER_VERB(ResumeVerb, "resume", "place a quarantined run's instances again")

}  // namespace
}  // namespace corral::cli
