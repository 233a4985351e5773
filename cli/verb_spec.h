// What a verb takes, read from the options its setup() adds: the one description of the command
// line that `corral help`, the man page (cli/manual.cc) and shell completion (cli/completion.cc)
// all print, so that none of them lists a flag twice or forgets one.
#pragma once

#include <string>
#include <vector>

#include "cli/verb.h"

namespace corral::cli {

struct OptionSpec {
  std::vector<std::string> names;  // "--instances", "-n"; a positional's own name ("file")
  bool positional = false;
  bool required = false;
  bool takes_value = false;          // false for a flag such as --json
  bool repeatable = false;           // --var NAME=VALUE, given as often as wanted
  std::string value;                 // what the value is: "FILE", "INT", "TEXT"
  std::vector<std::string> choices;  // a fixed set of values ({knee,bisect}), else empty
  std::string default_value;         // as --help shows it, "" when none is shown
  std::string help;
};

struct CommandSpec {
  std::string name;  // "status", or a verb's subcommand ("check" of config)
  std::vector<std::string> aliases;
  std::string summary;
  std::vector<OptionSpec> options;  // --home, then in the order the verb adds them
  std::vector<CommandSpec> subcommands;
};

// The command line of `verb`: its options, positionals and subcommands.
CommandSpec describe(const VerbInfo& verb);

// Every registered verb, sorted by name.
std::vector<CommandSpec> describe_all();

}  // namespace corral::cli
