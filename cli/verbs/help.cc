// `corral help [VERB]`: the list of verbs, or one verb's usage, options and subcommands (its
// section of the man page, as plain text).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/entry.h"
#include "cli/manual.h"
#include "cli/verb.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

class HelpVerb : public Verb {
 public:
  void setup(CLI::App& app) override { app.add_option("verb", verb_, "show this verb's options"); }

  int run(const Context&) override {
    if (verb_.empty()) {
      std::cout << render_help();
      return 0;
    }
    const VerbInfo* verb = find_verb(verb_);
    if (verb == nullptr) {
      std::cerr << "corral: unknown verb '" << verb_ << "'\n\n" << render_help();
      return kExitUsage;
    }
    std::cout << verb_help(describe(*verb));
    return kExitOk;
  }

 private:
  std::string verb_;
};

CORRAL_REGISTER_VERB(HelpVerb, "help", "list the verbs, or show one verb's options")

}  // namespace
}  // namespace corral::cli
