// Runs the `corral` command line in the test's own process (cli::main), capturing what it prints
// to std::cout and std::cerr: for the unit tests of verbs that need no daemon.
#pragma once

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/entry.h"

namespace corral::test {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

// `corral ARGS...`: args without the program's name.
inline CliRun run_in_process(std::vector<std::string> args) {
  args.insert(args.begin(), "corral");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
  CliRun r;
  r.code = cli::main(static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace corral::test
