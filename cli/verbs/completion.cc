// `corral completion bash|zsh|fish` prints a script that makes that shell complete corral's
// command lines. The script calls back `corral completion --words -- WORDS...` at each Tab, which
// prints the candidates for the last word, one a line, and exits 0 whatever happens: a daemon
// that does not answer only means no run ids (cli/completion.h).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/completion.h"
#include "cli/verb.h"
#include "cli/verb_spec.h"

namespace corral::cli {
namespace {

// "SHELL:{bash,zsh,fish}", as CLI11 shows a fixed set (and cli/verb_spec.cc reads one back).
std::string shell_type_name() {
  std::string out = "SHELL:{";
  for (const std::string& shell : completion_shells()) out += shell + ",";
  out.back() = '}';
  return out;
}

class CompletionVerb : public Verb {
 public:
  // One positional list, because the words after "--" may be anything ("", "-", "--home"): the
  // shell's name, or with --words the command line being completed.
  void setup(CLI::App& app) override {
    app.add_option("shell", args_, "the shell to print a script for: bash, zsh or fish")
        ->type_name(shell_type_name());
    app.add_flag("--words", words_,
                 "print the candidates for the last of the words after --, one a line (what the "
                 "scripts call)");
  }

  int run(const Context& ctx) override {
    if (words_) {
      const CompletionSources sources = daemon_sources(completion_context(args_, ctx));
      for (const std::string& c : complete(args_, describe_all(), sources)) std::cout << c << "\n";
      return 0;
    }
    const std::string script = args_.size() == 1 ? completion_script(args_[0]) : "";
    if (script.empty()) return usage_error("completion: name one shell: bash, zsh or fish");
    std::cout << script;
    return 0;
  }

 private:
  std::vector<std::string> args_;
  bool words_ = false;
};

CORRAL_REGISTER_VERB(CompletionVerb, "completion", "print a bash, zsh or fish completion script")

}  // namespace
}  // namespace corral::cli
