// corral's manual, rendered from what the code registers, so that nothing is written twice:
//   corral.1           every verb and flag (cli/verb_spec.h), the environment, exit codes;
//   corral-config.5    every config-file field (config::field_docs);
//   corral-scenario.5  the step kinds (the step registry) and the field tables of
//                      docs/scenarios.md, which is compiled into the binary for it.
// `corral help VERB` prints a verb's section as plain text. The build writes the pages into
// build/man/ with `corral man`, and `cmake --install` installs them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/verb_spec.h"

namespace corral::cli {

// The pages: "corral.1", "corral-config.5", "corral-scenario.5".
std::vector<std::string> man_page_names();

// A page as roff (man(7) macros), by its name with or without the section ("corral-config"),
// or nullopt when there is no such page.
std::optional<std::string> man_page(std::string_view name);

// A verb's usage, options and subcommands as plain text: `corral help VERB`.
std::string verb_help(const CommandSpec& verb);

}  // namespace corral::cli
