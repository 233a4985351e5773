// `corral man [PAGE]`: one of corral's man pages as roff, written from the code
// (cli/manual.h); `corral man | man -l -` reads it without installing it. The build writes the
// installed pages with it.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/manual.h"
#include "cli/verb.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

class ManVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("page", page_, "the page: corral, corral-config or corral-scenario")
        ->capture_default_str();
    app.add_flag("--list", list_, "print the pages' file names, one per line");
  }

  int run(const Context&) override {
    if (list_) {
      for (const std::string& name : man_page_names()) std::cout << name << "\n";
      return kExitOk;
    }
    const std::optional<std::string> page = man_page(page_);
    if (!page) {
      std::cerr << "corral: no man page '" << page_
                << "' (the pages: corral, corral-config, corral-scenario)\n";
      return kExitUsage;
    }
    std::cout << *page;
    return kExitOk;
  }

 private:
  std::string page_ = "corral";
  bool list_ = false;
};

CORRAL_REGISTER_VERB(ManVerb, "man", "print a man page as roff (corral man | man -l -)")

}  // namespace
}  // namespace corral::cli
