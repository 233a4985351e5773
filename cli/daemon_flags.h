// The settings flags shared by `corral daemon` and `corral start` (which passes them on to the
// daemon it launches).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/verb.h"
#include "config/config.h"

namespace CLI {
class Option;
}

namespace corral::cli {

struct DaemonFlags {
  int workers = 0;
  std::string listen;
  std::string config_file;
  std::string max_memory;
  std::string journal;
  CLI::Option* workers_option = nullptr;  // set by add_to(); tells whether --workers was given

  // Adds --workers, --listen, --config, --max-memory, --journal to `app`, bound to this struct.
  void add_to(CLI::App& app);

  // defaults(), then the --config file, then the flags, then --home; validated. Throws
  // config::ConfigError naming the field or flag at fault.
  config::Config build(const Context& ctx) const;

  // The settings these flags (and --home) set on this command line, each with its flag:
  // {"workers", "--workers"}, ... For config::origin_of().
  std::map<std::string, std::string> given(const Context& ctx) const;

  // The flags as `corral daemon` arguments for `cfg` (built by build()): --home always, the
  // config file as an absolute path, the rest as given.
  std::vector<std::string> to_args(const config::Config& cfg) const;
};

}  // namespace corral::cli
