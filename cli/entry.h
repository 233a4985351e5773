// The `corral` command line: every role except the hidden `corral worker`, which main.cc
// dispatches before calling this.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace corral::cli {

struct VerbInfo;
class Verb;

// Parses argv (argv[0] is the program name), runs the verb and returns the process exit code:
// 0 on success, 2 (kExitUsage) for an unknown verb or bad options, 3 (kExitDaemonNotRunning)
// when a verb needs the daemon and none answers, 1 for other failures. Prints to std::cout and
// std::cerr. May be called more than once per process (each call parses afresh).
int main(int argc, const char* const* argv);

// Adds `info`'s subcommand to `app`, with the verb's options (verb.setup) and the global --home
// bound to `home`, which must outlive `app`. Returns the subcommand.
CLI::App* add_verb_command(CLI::App& app, const VerbInfo& info, Verb& verb, std::string& home);

// The usage text listing every registered verb with its summary, sorted by name.
std::string render_help();

}  // namespace corral::cli
