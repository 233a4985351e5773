#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cli/verb.h"

namespace corral::cli {
namespace {

// A function-local static: verbs register from other files' static initialisers, whose order
// relative to this file's is unspecified.
std::vector<VerbInfo>& table() {
  static std::vector<VerbInfo> verbs;
  return verbs;
}

}  // namespace

bool register_verb(VerbInfo info) {
  std::vector<std::string> names = info.aliases;
  names.push_back(info.name);
  for (const std::string& n : names) {
    if (find_verb(n) != nullptr) {
      std::fprintf(stderr, "corral: verb name '%s' registered twice\n", n.c_str());
      std::abort();
    }
  }
  table().push_back(std::move(info));
  return true;
}

std::vector<const VerbInfo*> verbs() {
  std::vector<const VerbInfo*> out;
  for (const VerbInfo& v : table()) out.push_back(&v);
  std::sort(out.begin(), out.end(),
            [](const VerbInfo* a, const VerbInfo* b) { return a->name < b->name; });
  return out;
}

const VerbInfo* find_verb(const std::string& name) {
  for (const VerbInfo& v : table()) {
    if (v.name == name) return &v;
    if (std::find(v.aliases.begin(), v.aliases.end(), name) != v.aliases.end()) return &v;
  }
  return nullptr;
}

}  // namespace corral::cli
