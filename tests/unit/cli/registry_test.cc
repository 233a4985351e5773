// The verb registry: which verbs self-register, and lookup by name and alias.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli/entry.h"
#include "cli/verb.h"

namespace corral::cli {
namespace {

TEST_CASE("cli registry: lists exactly the expected verbs, sorted by name") {
  std::vector<std::string> names;
  for (const VerbInfo* v : verbs()) names.push_back(v->name);
  // The supervisor verbs, config, startup, monit, the manual (man, completion), the scenario verbs
  // (run, runs, show, cancel, resume, schedule), the load test verbs (load, report, compare).
  CHECK(names == std::vector<std::string>{
                     "cancel", "compare", "completion", "config", "daemon", "describe", "help",
                     "jlist",  "load",    "logs",       "man",    "monit",  "prune",    "reload",
                     "report", "restart", "resume",     "run",    "runs",   "scale",    "schedule",
                     "show",   "start",   "startup",    "status", "stop",   "version"});
}

TEST_CASE("cli registry: every verb has a summary and a factory") {
  for (const VerbInfo* v : verbs()) {
    INFO(v->name);
    CHECK_FALSE(v->summary.empty());
    CHECK(v->make() != nullptr);
  }
}

TEST_CASE("cli registry: finds a verb by its name or an alias, and nothing else") {
  REQUIRE(find_verb("status") != nullptr);
  CHECK(find_verb("ls") == find_verb("status"));
  CHECK(find_verb("list") == find_verb("status"));
  CHECK(find_verb("worker") == nullptr);  // a hidden role, not a verb
  CHECK(find_verb("nope") == nullptr);
}

TEST_CASE("cli registry: the help text names every verb with its summary") {
  const std::string help = render_help();
  for (const VerbInfo* v : verbs()) {
    INFO(v->name);
    CHECK(help.find("  " + v->name + " ") != std::string::npos);
    CHECK(help.find(v->summary) != std::string::npos);
  }
  CHECK(help.find("status") < help.find("stop"));  // sorted
}

}  // namespace
}  // namespace corral::cli
