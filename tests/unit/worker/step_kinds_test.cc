// The step-kind registry: the kinds that register themselves (steps/*/), each with a runner on
// the worker and a section in docs/scenarios.md.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "config/scenario/step_kind.h"
#include "worker/engine/step_runner.h"

namespace corral::worker {
namespace {

std::string read_doc(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("step kinds: the registry holds exactly the expected kinds, sorted by name") {
  std::vector<std::string> names;
  for (const scenario::StepKind* k : scenario::step_kinds()) names.emplace_back(k->name);
  CHECK(names == std::vector<std::string>{"callback", "exec", "parallel", "poll", "request",
                                          "sleep", "ws", "ws_close", "ws_receive", "ws_send"});
  CHECK(scenario::find_step_kind("ws_send") == scenario::step_kinds().back());
  CHECK(scenario::find_step_kind("nope") == nullptr);
}

TEST_CASE("step kinds: every kind takes its mark, has a parser and a runner on the worker") {
  for (const scenario::StepKind* k : scenario::step_kinds()) {
    INFO(k->name);
    CHECK(std::find(k->fields.begin(), k->fields.end(), k->mark) != k->fields.end());
    CHECK(k->parse != nullptr);
    CHECK(find_step_runner(k->name) != nullptr);
  }
  CHECK(find_step_runner("nope") == nullptr);
}

TEST_CASE("step kinds: docs/scenarios.md has a section and a table row for every kind") {
  const std::string doc = read_doc(std::string(CORRAL_SOURCE_DIR) + "/docs/scenarios.md");
  REQUIRE_FALSE(doc.empty());
  for (const scenario::StepKind* k : scenario::step_kinds()) {
    INFO(k->name);
    CHECK(doc.find("\n### `" + std::string(k->name) + "`\n") != std::string::npos);
    CHECK(doc.find("\n| " + std::string(k->name) + " | ") != std::string::npos);
  }
}

}  // namespace
}  // namespace corral::worker
