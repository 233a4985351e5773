// The gates of per-target limits on one worker: max_in_flight and a token bucket each hold
// requests back, a run's gate and the daemon's are passed in turn, runs waiting at one gate
// are served by fair share, and a limit that goes lets its waiting requests go.
#include "worker/engine/gates.h"

#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "shared/proc.h"

namespace corral::worker {
namespace {

using ipc::LimitShare;

// The loop, made before the gates that use it.
struct Loop {
  Loop() { uv_loop_init(&loop); }
  uv_loop_t loop;
};

struct Rig : Loop {
  ~Rig() {
    gates.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  std::vector<uint64_t> went;  // serials, in the order they went
  std::map<uint64_t, std::shared_ptr<Gates::Pass>> passes;
  std::unique_ptr<Gates> gates = std::make_unique<Gates>(
      &loop, [this](uint64_t serial, std::shared_ptr<Gates::Pass> pass) {
        went.push_back(serial);
        passes[serial] = std::move(pass);
      });
  void end(uint64_t serial) {
    auto pass = passes.at(serial);
    passes.erase(serial);
    gates->done(*pass, true);
  }
  // Runs the loop until `n` requests went or `ms` passed.
  void run_until_went(size_t n, uint64_t ms) {
    uint64_t deadline = monotonic_ms() + ms;
    while (went.size() < n && monotonic_ms() < deadline) uv_run(&loop, UV_RUN_NOWAIT);
  }
};

LimitShare flight(const std::string& run, const std::string& origin, uint32_t n) {
  return {{run, origin}, n, std::nullopt, 1};
}

const std::string kA = "http://a:80";

TEST_CASE("gates: max_in_flight holds requests until those in flight end") {
  Rig r;
  r.gates->apply({1, {flight("", kA, 2)}});
  CHECK_FALSE(r.gates->submit("any run", 1, "http://b:80", 99));  // no gate: not taken
  CHECK_FALSE(r.gates->submit("", 1, "http://a:81", 99));
  CHECK(r.went.empty());
  for (uint64_t s = 1; s <= 5; ++s) CHECK(r.gates->submit("r", 1, kA, s));
  CHECK(r.went == std::vector<uint64_t>{1, 2});
  auto use = r.gates->use();
  REQUIRE(use.use.size() == 1);
  CHECK(use.version == 1);
  CHECK(use.use[0].in_flight == 2);
  CHECK(use.use[0].waiting == 3);
  CHECK(use.use[0].throttled == 3);
  r.end(1);
  CHECK(r.went == std::vector<uint64_t>{1, 2, 3});
  r.end(2);
  r.end(3);
  CHECK(r.went == std::vector<uint64_t>{1, 2, 3, 4, 5});
  CHECK(r.gates->use().use[0].started == 5);
  CHECK(r.gates->use().use[0].waiting == 0);
}

TEST_CASE("gates: a request whose instance ended gives its place back unsent") {
  Rig r;
  r.gates->apply({1, {{{"", kA}, 1, 10.0, 1}}});
  r.gates->submit("r", 1, kA, 1);
  r.gates->submit("r", 1, kA, 2);
  REQUIRE(r.went.size() == 1);
  auto pass = r.passes.at(1);
  r.gates->done(*pass, false);  // not sent: its token comes back too
  CHECK(r.went == std::vector<uint64_t>{1, 2});
}

TEST_CASE("gates: a rate lets requests through no faster than its tokens come") {
  Rig r;
  // 50 a second, a bucket of 2: two at once, then one every 20 ms.
  r.gates->apply({1, {{{"", kA}, std::nullopt, 50.0, 2}}});
  uint64_t start = monotonic_ms();
  for (uint64_t s = 1; s <= 7; ++s) r.gates->submit("r", 1, kA, s);
  CHECK(r.went.size() == 2);
  r.run_until_went(7, 5000);
  REQUIRE(r.went.size() == 7);
  // Five more tokens take at least 100 ms to come: a lower bound, whatever the machine's load.
  CHECK(monotonic_ms() - start >= 99);
}

TEST_CASE("gates: a share of 0 holds everything until the next share") {
  Rig r;
  r.gates->apply({1, {flight("", kA, 0)}});
  r.gates->submit("r", 1, kA, 1);
  CHECK(r.went.empty());
  r.gates->apply({2, {flight("", kA, 1)}});
  CHECK(r.went == std::vector<uint64_t>{1});
}

TEST_CASE("gates: a request passes its run's gate, then the daemon's") {
  Rig r;
  r.gates->apply({1, {flight("r", kA, 1), flight("", kA, 2)}});
  r.gates->submit("r", 1, kA, 1);
  r.gates->submit("r", 1, kA, 2);    // held by r's gate
  r.gates->submit("s", 1, kA, 3);    // s has no gate of its own: the daemon's lets it through
  r.gates->submit("s", 1, kA, 4);    // the daemon's is full
  CHECK(r.went == std::vector<uint64_t>{1, 3});
  REQUIRE(r.passes.at(1)->held[0] != nullptr);
  CHECK(r.passes.at(1)->held[1] != nullptr);
  // Ending 1 frees r's gate and a place at the daemon's, which 4 was waiting for: 2 passes
  // r's gate and waits at the daemon's in turn.
  r.end(1);
  CHECK(r.went == std::vector<uint64_t>{1, 3, 4});
  CHECK(r.gates->use().use.at(0).waiting == 1);  // the daemon's gate (run "") comes first
  r.end(3);
  CHECK(r.went == std::vector<uint64_t>{1, 3, 4, 2});
}

TEST_CASE("gates: runs waiting at one gate take turns by their priority") {
  Rig r;
  r.gates->apply({1, {flight("", kA, 1)}});
  r.gates->submit("big", 1, kA, 1);  // goes
  for (uint64_t s = 2; s <= 20; ++s) r.gates->submit("big", 1, kA, s);
  for (uint64_t s = 101; s <= 103; ++s) r.gates->submit("small", 1, kA, s);
  for (int k = 0; k < 6; ++k) r.end(r.went.back());
  // The small run behind the big one went in turns with it, not after all of it.
  CHECK(r.went == std::vector<uint64_t>{1, 2, 101, 3, 102, 4, 103});

  Rig w;
  w.gates->apply({1, {flight("", kA, 1)}});
  w.gates->submit("one", 1, kA, 1);
  for (uint64_t s = 2; s <= 9; ++s) w.gates->submit("one", 1, kA, s);
  for (uint64_t s = 101; s <= 109; ++s) w.gates->submit("three", 3, kA, s);
  for (int k = 0; k < 8; ++k) w.end(w.went.back());
  size_t three = std::count_if(w.went.begin() + 1, w.went.end(), [](uint64_t s) { return s > 100; });
  CHECK(three == 6);  // three of every four turns
}

TEST_CASE("gates: requests waiting at a limit that goes away go on") {
  Rig r;
  r.gates->apply({1, {flight("r", kA, 1), flight("", kA, 5)}});
  for (uint64_t s = 1; s <= 3; ++s) r.gates->submit("r", 1, kA, s);
  CHECK(r.went.size() == 1);
  r.gates->apply({2, {flight("", kA, 5)}});  // the run's limit ended
  CHECK(r.went == std::vector<uint64_t>{1, 2, 3});
  CHECK(r.gates->use().use.size() == 1);
  CHECK(r.gates->use().use[0].in_flight == 3);
  r.end(1);  // held a place of the gone gate too: nothing breaks
  CHECK(r.gates->use().use[0].in_flight == 2);
  r.gates->apply({3, {}});
  CHECK(r.gates->empty());
  r.end(2);
  r.end(3);
}

}  // namespace
}  // namespace corral::worker
