// `corral status` (ls, list): the table of workers, like `pm2 ls`.
#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/verb.h"
#include "cli/workers.h"

namespace corral::cli {
namespace {

class StatusVerb : public Verb {
 public:
  void setup(CLI::App&) override {}
  int run(const Context& ctx) override { return print_status(Api(ctx)); }
};

CORRAL_REGISTER_VERB(StatusVerb, "status", "show the workers as a table", "ls", "list")

}  // namespace
}  // namespace corral::cli
