#include "config/scenario/step_kind.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>

namespace corral::scenario {
namespace {

// A function-local static: kinds register from other files' static initialisers, whose order
// relative to this file's is unspecified. A deque, so that a kind's address never changes.
std::deque<StepKind>& table() {
  static std::deque<StepKind> kinds;
  return kinds;
}

}  // namespace

bool register_step_kind(StepKind kind) {
  for (const StepKind& k : table()) {
    if (k.name == kind.name || k.mark == kind.mark) {
      std::fprintf(stderr, "corral: step kind '%.*s' registered twice\n",
                   static_cast<int>(kind.name.size()), kind.name.data());
      std::abort();
    }
  }
  table().push_back(std::move(kind));
  return true;
}

std::vector<const StepKind*> step_kinds() {
  std::vector<const StepKind*> out;
  for (const StepKind& k : table()) out.push_back(&k);
  std::sort(out.begin(), out.end(),
            [](const StepKind* a, const StepKind* b) { return a->name < b->name; });
  return out;
}

const StepKind* find_step_kind(std::string_view name) {
  for (const StepKind& k : table()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace corral::scenario
