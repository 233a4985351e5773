// Running a "sleep" step: one wake-up at the end, nothing sent.
#include "shared/proc.h"
#include "steps/sleep/sleep.h"
#include "worker/engine/instance.h"
#include "worker/engine/jitter.h"
#include "worker/engine/step_runner.h"

namespace corral::steps::sleep {
namespace {

using worker::Engine;
using worker::Instance;

class SleepRunner final : public worker::StepRunner {
 public:
  void run(Engine& engine, Instance& in) const override { engine.wake_step_at(in, end_ms(in)); }

  // The loop's clock and the wall clock round differently: never end a sleep early.
  void on_wake(Engine& engine, Instance& in) const override {
    int64_t end = end_ms(in);
    if (unix_ms_now() < end) {
      engine.wake_step_at(in, end);
      return;
    }
    engine.step_passed(in, nullptr, -1);
  }

 private:
  // When this instance's sleep ends, its jitter applied (the same each time it is asked, on
  // any worker).
  static int64_t end_ms(const Instance& in) {
    const Sleep& sleep = in.step().spec_as<Sleep>();
    return in.cp.step_started_ms +
           static_cast<int64_t>(worker::jittered_ms(sleep.ms, sleep.jitter, in.run->jitter_seed,
                                                    in.index, in.cp.step, 0));
  }
};

}  // namespace

CORRAL_REGISTER_STEP_RUNNER(SleepRunner, "sleep")

}  // namespace corral::steps::sleep
