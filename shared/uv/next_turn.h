// Runs a callback once, in the next turn of the loop, after the loop has polled for I/O: for
// work done in slices (placing instances, handling a worker's burst of frames) that must let
// other callbacks in between.
//
// A zero-timeout uv_timer restarted from its own callback does not do this: libuv 1.44 runs
// it again in the same pass over the timers, so the slices run back to back and the loop never
// polls in between. An idle handle runs at most once per turn, and while one is active the
// loop polls without blocking. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>

#include "shared/uv/handle.h"

namespace corral::uv {

// The time one turn of the loop may spend on such work. Work that grows with the number of
// instances (a worker's burst of frames, placing, requeueing after a death) stops when the
// turn's slice is over and goes on in the next turn, so that the loop, and the API's answers,
// never wait long. Every kind of work in a turn shares one slice (of_turn), and each does at
// least one unit of its work per call, so that none is starved by the others.
class Slice {
 public:
  static constexpr uint64_t kNs = 1'000'000;
  explicit Slice(uint64_t ns = kNs, uint64_t start_ns = uv_hrtime()) : start_(start_ns), ns_(ns) {}
  // The slice of the current turn of `loop`, begun by the first call in the turn. On a loop
  // with a TurnMarker a turn is everything between two polls for I/O; on one without, turns
  // are told apart by the loop's time in ms, which libuv moves on after its poll and again
  // before its timers, so that one turn may hold two slices.
  static Slice of_turn(uv_loop_t* loop);
  bool over() const { return uv_hrtime() - start_ >= ns_; }

 private:
  uint64_t start_;
  uint64_t ns_;
};

// Marks the turns of a loop for Slice::of_turn: its prepare callback runs just before each
// poll, so the work that answers one poll's I/O and the timers and idle callbacks that follow
// it share one slice. Whoever runs the loop keeps one for the loop's life (the master's daemon,
// a worker); one per thread.
class TurnMarker {
 public:
  explicit TurnMarker(uv_loop_t* loop);
  ~TurnMarker();
  TurnMarker(const TurnMarker&) = delete;
  TurnMarker& operator=(const TurnMarker&) = delete;

 private:
  static void on_prepare(uv_prepare_t* h);
  Handle<uv_prepare_t> handle_;
};

class NextTurn {
 public:
  explicit NextTurn(uv_loop_t* loop);
  // Schedules `cb` (replacing one scheduled before). The callback may schedule again, or
  // destroy this NextTurn.
  void schedule(std::function<void()> cb);
  void cancel();
  bool scheduled() const;

 private:
  static void on_idle(uv_idle_t* h);
  Handle<uv_idle_t> handle_;
  std::function<void()> cb_;
};

}  // namespace corral::uv
