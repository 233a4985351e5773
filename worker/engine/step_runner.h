// The registry of step kinds, the running half (the parsing half is
// config/scenario/step_kind.h). A kind's steps/<kind>/run.cc derives a StepRunner and registers
// it under the kind's name with CORRAL_REGISTER_STEP_RUNNER; the engine finds each step's runner
// when a run is defined, and calls it at the points below. A runner holds no state of its own:
// everything an instance needs to continue lives in its checkpoint, so it can move.
//
// The run halves are built as an OBJECT library whose objects every user of corral_worker
// links (CMakeLists.txt). Runners are called on the engine's loop thread, inside the engine's
// guard: an exception from a runner ends that instance `errored`, nothing else.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>

#include "config/scenario/response.h"
#include "worker/http/client.h"

namespace corral::ipc {
struct Checkpoint;
}

namespace corral::worker {

class Engine;
struct Instance;

// What the sockets of one load test did (the WebSocket steps), since its start.
struct SocketCounts {
  uint64_t open = 0;    // open now
  uint64_t opened = 0;  // openings that succeeded
  uint64_t failed = 0;  // openings that failed
  uint64_t closed = 0;  // open sockets the server closed, or that were lost
  uint64_t sent = 0;    // messages
  uint64_t received = 0;
  // The codes of the closes counted in `closed`: the server's close code, or 1006 when no close
  // frame came (the connection was dropped or reset, or corral ended it on a protocol error).
  std::map<uint16_t, uint64_t> close_codes;
};

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // The instance's current step starts (in.cp.step_started_ms was just set, in.cp.deadline_ms
  // from the step's limit) or resumes from a checkpoint that says it had started. A runner
  // ends the step through the engine (step_passed, finish) or waits (wait_until, send).
  virtual void run(Engine& engine, Instance& in) const = 0;
  // The wake-up the runner asked for with Engine::wait_until(in, at, Next::kStep) is due.
  virtual void on_wake(Engine& engine, Instance& in) const;
  // The step's request got its answer (Engine::send). Called for kinds that send only.
  virtual void on_response(Engine& engine, Instance& in, HttpResponse&& resp) const;
  // A checkpoint from elsewhere (another worker, the journal) is about to resume this step,
  // in in.cp: reset what does not carry over, such as a try that was in flight. (A step whose
  // needs could not move with it sends the instance back first: Step::resume_at.)
  virtual void resumed(Instance& /*in*/) const {}
  // The word for the step in "<word> timed out after 30s".
  virtual std::string_view limit_word() const { return "step"; }
  // Branch `b` of the instance's step (Engine::fork) ended: its state says how. Called from
  // the loop, after the branch's last step event went out.
  virtual void branch_ended(Engine& /*engine*/, Instance& /*in*/, size_t /*b*/) const {}
  // The instance leaves the engine while its step is this kind's (it ended, was cancelled, or
  // is handed to another worker): release what the step holds for it.
  virtual void left(Engine& /*engine*/, const Instance& /*in*/) const {}
  // The step's deadline passed (Engine::time_out_at): it is about to fail, timed out.
  virtual void timed_out(Engine& /*engine*/, Instance& /*in*/) const {}

  // What a kind keeps per engine (exec: its children), beside the stateless runner.
  class State {
   public:
    virtual ~State() = default;
    // Instance `serial` left the engine (it ended, was cancelled or handed on), whatever step
    // it was at: what the kind keeps for it across steps (a WebSocket) goes.
    virtual void instance_gone(uint64_t /*serial*/) {}
    // A load test's VU that held things across its iterations (IterationSink::SocketHold::key)
    // retired: they go.
    virtual void holder_gone(uint64_t /*key*/) {}
    // Adds what the kind's sockets of a load test's `group` did, since the group's first, to
    // `out`; `forget`: the group is over, its counts go after this call.
    virtual void count_sockets(uint32_t /*group*/, bool /*forget*/, SocketCounts& /*out*/) {}
  };
  // Makes the kind's State, on the first Engine::state_of() call; destroyed with the engine.
  virtual std::unique_ptr<State> make_state(Engine& /*engine*/) const { return nullptr; }
};

// Adds the runner of kind `kind`; aborts on a duplicate (a programming error). Returns true so
// it can initialise a static.
bool register_step_runner(std::string_view kind, std::unique_ptr<StepRunner> runner);
// The runner of kind `kind`, or nullptr.
const StepRunner* find_step_runner(std::string_view kind);

}  // namespace corral::worker

// CORRAL_REGISTER_STEP_RUNNER(SleepRunner, "sleep") at namespace scope in the kind's run.cc.
#define CORRAL_REGISTER_STEP_RUNNER(Type, kind)                                               \
  [[maybe_unused]] static const bool CORRAL_RUNNER_CONCAT(corral_step_runner_, __COUNTER__) = \
      ::corral::worker::register_step_runner(kind, std::make_unique<Type>());
#define CORRAL_RUNNER_CONCAT(a, b) CORRAL_RUNNER_CONCAT_INNER(a, b)
#define CORRAL_RUNNER_CONCAT_INNER(a, b) a##b
