// Ids of runs and load tests: "<prefix><n>-<4 hex digits>". The number orders them and never
// repeats (the caller keeps the sequence); the suffix keeps ids from different homes apart in a
// user's notes. Loop thread only.
#pragma once

#include <cstdint>
#include <string>

namespace corral::master {

std::string numbered_id(char prefix, uint64_t n);

}  // namespace corral::master
