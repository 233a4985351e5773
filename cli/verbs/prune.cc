// `corral prune [--older-than 7d]`: forgets finished runs, in the daemon and in its journal.
// Without --older-than it applies the configured retention (keep_runs, keep_runs_for) now.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/verb.h"
#include "config/config.h"

namespace corral::cli {
namespace {

class PruneVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("--older-than", older_than_,
                   "forget finished runs that finished longer ago than this, e.g. 7d, 12h");
  }
  int run(const Context& ctx) override {
    if (!older_than_.empty() && !config::parse_duration_ms(older_than_)) {
      return usage_error("--older-than " + older_than_ + ": expected a duration like 7d or 12h");
    }
    const Api api(ctx);
    std::string path = "/runs";
    if (!older_than_.empty()) path += "?older_than=" + older_than_;
    auto answer = api.del(path);
    if (!answer) return report_failure(answer.status(), api.socket_path());
    const long pruned = static_cast<long>(json_number(*answer, "pruned"));
    std::cout << "corral: pruned " << counted(pruned, "finished run", "finished runs") << "\n";
    return 0;
  }

 private:
  std::string older_than_;
};

CORRAL_REGISTER_VERB(PruneVerb, "prune", "forget finished runs (all older than --older-than)")

}  // namespace
}  // namespace corral::cli
