// `corral cancel RUN`: cancels every instance of a run that has not finished.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/verb.h"

namespace corral::cli {
namespace {

class CancelVerb : public Verb {
 public:
  void setup(CLI::App& app) override { app.add_option("run", run_, "run id")->required(); }
  int run(const Context& ctx) override {
    const Api api(ctx);
    auto answer = api.del("/runs/" + run_);
    if (!answer) return report_failure(answer.status(), api.socket_path());
    std::cout << "corral: run " << run_ << ": cancelled "
              << counted(static_cast<long>(json_number(*answer, "cancelled")), "instance",
                         "instances")
              << "\n";
    return 0;
  }

 private:
  std::string run_;
};

CORRAL_REGISTER_VERB(CancelVerb, "cancel", "cancel what has not finished in a run")

}  // namespace
}  // namespace corral::cli
