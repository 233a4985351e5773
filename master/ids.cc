#include "master/ids.h"

#include <cstdio>
#include <random>

namespace corral::master {

std::string numbered_id(char prefix, uint64_t n) {
  static std::mt19937_64 rng{std::random_device{}()};
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%c%llu-%04x", prefix, static_cast<unsigned long long>(n),
                static_cast<unsigned>(rng() & 0xffff));
  return buf;
}

}  // namespace corral::master
