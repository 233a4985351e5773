// `corral daemon`: the master, in the foreground (for systemd, containers, and `corral start`).
#include <filesystem>

#include <CLI/CLI.hpp>

#include "cli/daemon_flags.h"
#include "cli/verb.h"
#include "master/daemon.h"

namespace corral::cli {
namespace {

class DaemonVerb : public Verb {
 public:
  void setup(CLI::App& app) override { flags_.add_to(app); }

  // A ConfigError from build() reaches the entry, which prints it and exits with 78.
  // The config file's absolute path goes along, so SIGHUP can read it again.
  int run(const Context& ctx) override {
    config::Config cfg = flags_.build(ctx);
    std::string file;
    if (!flags_.config_file.empty()) file = std::filesystem::absolute(flags_.config_file);
    return master::run_daemon(cfg, file);
  }

 private:
  DaemonFlags flags_;
};

CORRAL_REGISTER_VERB(DaemonVerb, "daemon", "run the master in the foreground (for systemd)")

}  // namespace
}  // namespace corral::cli
