// The master's end of a worker's pipe: a burst of frames is handled a few milliseconds per turn
// of the loop, and every frame a worker sent before it exited is handled before its exit is.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "master/worker_process.h"
#include "shared/ipc/codec.h"
#include "shared/proc.h"
#include "tests/support/temp_dir.h"

using corral::master::SpawnSpec;
using corral::master::WorkerProcess;
using corral::ipc::MessageType;

namespace {

constexpr int kFrames = 200;

// A "worker" that writes kFrames heartbeats to fd 3, then lives on for `linger`.
struct Burst {
  explicit Burst(const std::string& linger) {
    std::string bytes;
    for (int i = 0; i < kFrames; ++i) {
      const nlohmann::json beat = {{"seq", i}, {"pad", std::string(2000, 'x')}};
      auto f = corral::ipc::encode(MessageType::kHeartbeat, beat);
      REQUIRE(f.is_ok());
      bytes += *f;
    }
    std::ofstream(dir.path() + "/frames.bin", std::ios::binary) << bytes;
    uv_loop_init(&loop);
    marker.emplace(&loop);
    uv_prepare_init(&loop, &turns);
    turns.data = this;
    uv_prepare_start(&turns, [](uv_prepare_t* p) { static_cast<Burst*>(p->data)->turn += 1; });
    SpawnSpec spec{"/bin/sh", "", {"-c", "cat " + dir.path() + "/frames.bin >&3; " + linger}};
    WorkerProcess::Callbacks cb;
    cb.on_frame = [this](corral::ipc::Frame&& f) {
      CHECK(f.payload.at("seq") == static_cast<int>(seen.size()));  // in order, none lost
      seen.push_back(turn);
      // Each frame costs a millisecond of work: 200 of them cannot fit in one turn.
      uint64_t until = uv_hrtime() + 1'000'000;
      while (uv_hrtime() < until) {
      }
    };
    cb.on_protocol_error = [](const corral::Status& s) { FAIL(s.message()); };
    cb.on_exit = [this](int64_t, int) {
      seen_at_exit = static_cast<int>(seen.size());
      process.reset();
    };
    auto w = WorkerProcess::spawn(&loop, spec, cb);
    REQUIRE(w.is_ok());
    process = std::move(*w);
  }
  ~Burst() {
    process.reset();
    marker.reset();
    uv_close(reinterpret_cast<uv_handle_t*>(&turns), nullptr);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
  void run_until_exit() {
    uint64_t deadline = corral::monotonic_ms() + 20000;
    while (process && corral::monotonic_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    REQUIRE_FALSE(process);
  }

  corral::test::TempDir dir;
  uv_loop_t loop;
  std::optional<corral::uv::TurnMarker> marker;
  uv_prepare_t turns;
  uint64_t turn = 0;
  std::vector<uint64_t> seen;  // the loop turn each frame was handled in
  int seen_at_exit = -1;
  std::unique_ptr<WorkerProcess> process;
};

}  // namespace

TEST_CASE("worker process: a burst of frames is handled over many turns of the loop") {
  Burst b("sleep 2");
  b.run_until_exit();
  REQUIRE(b.seen.size() == kFrames);
  std::set<uint64_t> turns(b.seen.begin(), b.seen.end());
  INFO("frames handled in " << turns.size() << " turns");
  CHECK(turns.size() >= 10);  // a turn takes a slice's worth: 70 turns or more
}

TEST_CASE("worker process: a turn handles a slice's worth of frames, reads and resumes alike") {
  // Each frame costs 1 ms: the frames a read brings and those handled in the idle callback
  // before the next poll share one slice, so a turn handles as many as a slice holds, and the
  // one the idle callback always handles (at least a unit of work per call).
  Burst b("sleep 2");
  b.run_until_exit();
  REQUIRE(b.seen.size() == kFrames);
  std::map<uint64_t, int> per_turn;
  for (uint64_t turn : b.seen) per_turn[turn] += 1;
  int most = 0;
  for (const auto& [turn, n] : per_turn) most = std::max(most, n);
  CHECK(most <= static_cast<int>(corral::uv::Slice::kNs / 1'000'000) + 1);
}

TEST_CASE("worker process: every frame a worker sent before it exited is handled before its "
          "exit is") {
  Burst b("exit 0");
  b.run_until_exit();
  CHECK(b.seen_at_exit == kFrames);
}

TEST_CASE("worker process: frames in the pipe or waiting for a turn count as unread") {
  Burst b("sleep 2");
  // Before the loop runs, the frames wait in the pipe.
  const uint64_t deadline = corral::monotonic_ms() + 10000;
  while (!b.process->has_unread() && corral::monotonic_ms() < deadline) uv_sleep(1);
  CHECK(b.process->has_unread());
  // A turn handles a few milliseconds of them; the rest wait.
  uv_run(&b.loop, UV_RUN_ONCE);
  REQUIRE(b.seen.size() < static_cast<size_t>(kFrames));
  CHECK(b.process->has_unread());
  while (b.seen.size() < static_cast<size_t>(kFrames) && corral::monotonic_ms() < deadline) {
    uv_run(&b.loop, UV_RUN_ONCE);
  }
  REQUIRE(b.seen.size() == static_cast<size_t>(kFrames));
  CHECK_FALSE(b.process->has_unread());  // all handled, and the worker says nothing more
  b.run_until_exit();
}
