// `corral help [VERB]`: the list of verbs, or one verb's options.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/entry.h"
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
    if (find_verb(verb_) == nullptr) {
      std::cerr << "corral: unknown verb '" << verb_ << "'\n\n" << render_help();
      return kExitUsage;
    }
    const char* argv[] = {"corral", verb_.c_str(), "--help"};
    return main(3, argv);
  }

 private:
  std::string verb_;
};

CORRAL_REGISTER_VERB(HelpVerb, "help", "list the verbs, or show one verb's options")

}  // namespace
}  // namespace corral::cli
