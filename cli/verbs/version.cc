// `corral version`.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/verb.h"

namespace corral::cli {
namespace {

class VersionVerb : public Verb {
 public:
  void setup(CLI::App&) override {}
  int run(const Context&) override {
    std::cout << "corral " CORRAL_VERSION "\n";
    return 0;
  }
};

CORRAL_REGISTER_VERB(VersionVerb, "version", "print corral's version")

}  // namespace
}  // namespace corral::cli
