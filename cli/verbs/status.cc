// `corral status` (ls, list): the table of workers, like `pm2 ls`; with --cluster, the hosts
// sharing the daemon's PostgreSQL journal.
#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/status_view.h"
#include "cli/verb.h"
#include "cli/workers.h"

namespace corral::cli {
namespace {

class StatusVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_flag("--cluster", cluster_, "the hosts sharing the daemon's PostgreSQL journal");
  }
  int run(const Context& ctx) override {
    Api api(ctx);
    if (!cluster_) return print_status(api);
    auto cluster = api.get("/cluster");
    if (!cluster) return report_failure(cluster.status(), api.socket_path());
    const TableStyle style = ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii;
    std::cout << render_cluster_table(*cluster, style);
    return 0;
  }

 private:
  bool cluster_ = false;
};

CORRAL_REGISTER_VERB(StatusVerb, "status", "show the workers (or with --cluster the hosts) as a table",
                     "ls", "list")

}  // namespace
}  // namespace corral::cli
