// The master role: `corral daemon`. Runs in the foreground until SIGTERM/SIGINT or a
// shutdown request, supervising cfg.workers (or one per usable CPU) worker processes and
// serving the control API on $CORRAL_HOME/corral.sock and cfg.listen.
#pragma once

#include <string>

#include "config/config.h"

namespace corral::master {

// Returns the process exit code: 0 after a graceful stop, non-zero when start-up failed
// (the reason is logged and printed to stderr). `config_file`, when given, is re-read on
// SIGHUP.
int run_daemon(const config::Config& cfg, const std::string& config_file);
int run_daemon(const config::Config& cfg);

}  // namespace corral::master
