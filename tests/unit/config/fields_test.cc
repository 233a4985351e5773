// The field table's lookups: by exact name, and the closest name for "did you mean".
#include "config/fields.h"

#include <catch2/catch.hpp>

namespace corral::config {
namespace {

TEST_CASE("config fields: edit distance counts insertions, deletions and substitutions") {
  struct Case {
    const char* a;
    const char* b;
    size_t distance;
  };
  const Case cases[] = {
      {"", "", 0},
      {"", "abc", 3},
      {"abc", "", 3},
      {"workers", "workers", 0},
      {"wokers", "workers", 1},         // insertion
      {"workerss", "workers", 1},       // deletion
      {"wurkers", "workers", 1},        // substitution
      {"max_memroy", "max_memory", 2},  // a swap is two substitutions
      {"kitten", "sitting", 3},
      {"log_max_bytes", "log_max_size", 4},
  };
  for (const Case& c : cases) {
    CAPTURE(c.a, c.b);
    CHECK(edit_distance(c.a, c.b) == c.distance);
    CHECK(edit_distance(c.b, c.a) == c.distance);
  }
}

TEST_CASE("config fields: the closest field is within two edits or contains the name") {
  struct Case {
    const char* name;
    const char* closest;  // nullptr: no suggestion
  };
  const Case cases[] = {
      {"wokers", "workers"},
      {"max_memroy", "max_memory"},
      {"max_memory_bytes", "max_memory"},         // contains a field
      {"kernel_factor", "memory_kernel_factor"},  // contained in a field
      {"worker", "workers"},                      // in workers and worker_instances: the nearer
      {"listne", "listen"},
      {"log_max_bytes", nullptr},  // four edits, and neither contains the other
      {"home", nullptr},
      {"zzz", nullptr},
      {"ma", nullptr},  // too short to count as contained
      {"", nullptr},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Field* f = closest_field(c.name);
    if (c.closest == nullptr) {
      CHECK(f == nullptr);
    } else {
      REQUIRE(f != nullptr);
      CHECK(f->name == c.closest);
    }
  }
}

}  // namespace
}  // namespace corral::config
