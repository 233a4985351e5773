// The memory model: what an instance costs, learned from heartbeats at each worker's fullest,
// and how many instances fit in a worker's budget.
#include <catch2/catch.hpp>

#include <limits>

#include "master/memory_model.h"

using corral::master::MemoryModel;

namespace {
constexpr uint64_t kMiB = 1 << 20;
}  // namespace

TEST_CASE("memory model: without a budget a worker holds any number") {
  MemoryModel m;
  CHECK(m.capacity(0) == std::numeric_limits<uint64_t>::max());
}

TEST_CASE("memory model: the first guess is on the high side, then the measured cost serves") {
  MemoryModel m(32 * kMiB);
  CHECK_FALSE(m.measured());
  CHECK(m.bytes_per_instance() == MemoryModel::kInitialBytes);
  // Before its first heartbeat, a worker's idle RSS is guessed.
  CHECK(m.capacity(0) == (32 * kMiB - MemoryModel::kIdleGuess) / MemoryModel::kInitialBytes);

  m.sample(0, 15 * kMiB, 15 * kMiB, 0);  // idle
  m.sample(0, 15 * kMiB + 200 * 800, 15 * kMiB, 200);  // too few to measure
  CHECK_FALSE(m.measured());
  m.sample(0, 15 * kMiB + 10000 * 800, 15 * kMiB, 10000);
  CHECK(m.measured());
  CHECK(m.bytes_per_instance() == 800);
  CHECK(m.capacity(0) == 17 * kMiB / 800);
}

TEST_CASE("memory model: samples below a worker's peak do not change the cost") {
  MemoryModel m(64 * kMiB);
  m.sample(0, 15 * kMiB + 20000 * 1000, 15 * kMiB, 20000);
  REQUIRE(m.bytes_per_instance() == 1000);
  // Instances ended; RSS stays where it was (the allocator keeps its pages).
  m.sample(0, 15 * kMiB + 20000 * 1000, 15 * kMiB, 2000);
  CHECK(m.bytes_per_instance() == 1000);
  // A new peak measures again.
  m.sample(0, 15 * kMiB + 30000 * 900, 15 * kMiB, 30000);
  CHECK(m.bytes_per_instance() == 900);
}

TEST_CASE("memory model: the dearest live worker decides, and a gone worker's cost is kept") {
  MemoryModel m(64 * kMiB);
  m.sample(0, 10 * kMiB + 5000 * 600, 10 * kMiB, 5000);
  m.sample(1, 12 * kMiB + 5000 * 1200, 12 * kMiB, 5000);
  CHECK(m.bytes_per_instance() == 1200);
  // Each worker's own idle RSS counts against its budget.
  CHECK(m.capacity(0) == 54 * kMiB / 1200);
  CHECK(m.capacity(1) == 52 * kMiB / 1200);
  m.forget(1);
  m.forget(0);
  CHECK(m.measured());
  CHECK(m.bytes_per_instance() == 600);  // the last one gone
  // A new worker, before its first heartbeat: the last idle RSS seen (slot 1's) stands in.
  CHECK(m.capacity(1) == 52 * kMiB / 600);
}

TEST_CASE("memory model: a budget below the idle RSS holds nothing") {
  MemoryModel m(8 * kMiB);
  m.sample(0, 15 * kMiB, 15 * kMiB, 0);
  CHECK(m.capacity(0) == 0);
}
