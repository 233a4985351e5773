// Running a "poll" step: an attempt is one request (with its retries); `fail_if` and `until`
// judge each answer, and the next attempt waits its interval.
#include <algorithm>
#include <cmath>

#include "config/scenario/condition.h"
#include "shared/proc.h"
#include "steps/poll/poll.h"
#include "worker/engine/http_step.h"
#include "worker/engine/instance.h"
#include "worker/engine/jitter.h"

namespace corral::steps::poll {
namespace {

using worker::Engine;
using worker::HttpResponse;
using worker::Instance;

// A poll with max_attempts reports its attempt count about this often.
constexpr uint64_t kProgressEveryMs = 60000;

class PollRunner final : public worker::HttpStepRunner {
 public:
  // An attempt starts with its first try; a retry of the same attempt is no new one.
  void count_attempt(ipc::Checkpoint& cp) const override {
    if (cp.tries == 0) cp.attempts += 1;
  }

  void judge(Engine& engine, Instance& in, const scenario::ResponseView& view,
             const HttpResponse& resp) const override {
    const scenario::Step& step = in.step();
    const Poll& poll = step.spec_as<Poll>();
    if (auto bad = scenario::first_holding(poll.fail_if, view)) {
      engine.expect_failed(in);
      engine.finish(in, ipc::Outcome::kFailed, "fail_if held: " + bad->explanation, &resp);
      return;
    }
    if (const scenario::Condition* pending = scenario::first_failing(poll.until, view)) {
      not_held(engine, in, poll, *pending, view, resp);
      return;
    }
    if (!engine.capture_all(in, step, view, &resp)) return;
    engine.step_passed(in, &resp, unix_ms_now() - in.cp.step_started_ms);
  }

  // An attempt that was in flight when the instance stopped is lost: the next is a new one.
  // A poll that had begun elsewhere and comes without the time of its next attempt (its
  // worker or host died; only a move between live workers carries it) does not know when
  // that attempt was due, only that it was within an interval. It makes it at a point spread
  // over one interval, by the jitter's hash, instead of at once: the 33,000 polls of a dead
  // host, or a million after a restart, do not reach their target in the same moment.
  // One whose deadline comes first polls at once, as before (or fails, when it has passed).
  void resumed(Instance& in) const override {
    in.cp.tries = 0;
    if (in.cp.step_started_ms == 0 || in.cp.wake_ms != 0) return;
    const Poll& poll = in.step().spec_as<Poll>();
    double u = worker::jitter_unit(in.run->jitter_seed, in.index, in.cp.step, in.cp.attempts);
    int64_t at =
        unix_ms_now() + static_cast<int64_t>(u * static_cast<double>(interval_ms(in, poll)));
    if (in.cp.deadline_ms == 0 || at < in.cp.deadline_ms) in.cp.wake_ms = at;
  }

  std::string_view limit_word() const override { return "poll"; }

 private:
  // Schedules the next attempt of a poll whose `until` did not hold (`pending` is the first
  // condition that did not), or ends the step. The explanation, which costs more than the
  // check, is worded only when the step ends or its deadline comes before the next attempt.
  void not_held(Engine& engine, Instance& in, const Poll& poll, const scenario::Condition& pending,
                const scenario::ResponseView& view, const HttpResponse& resp) const {
    auto explanation = [&] { return scenario::evaluate(pending, view).explanation; };
    if (poll.max_attempts != 0 && static_cast<int>(in.cp.attempts) >= poll.max_attempts) {
      engine.finish(
          in, ipc::Outcome::kFailed,
          "until not met after " + std::to_string(in.cp.attempts) + " attempts: " + explanation(),
          &resp);
      return;
    }
    int64_t now = unix_ms_now();
    auto timed_out = [&] { return engine.timed_out_reason(in, -1) + ": " + explanation(); };
    if (in.cp.deadline_ms != 0 && now >= in.cp.deadline_ms) {
      engine.finish(in, ipc::Outcome::kFailed, timed_out(), &resp);
      return;
    }
    int64_t next = now + interval_ms(in, poll);
    in.cp.tries = 0;
    if (poll.max_attempts != 0) report_now_and_then(engine, in, poll);
    if (in.cp.deadline_ms != 0 && next >= in.cp.deadline_ms) {
      engine.time_out_at(in, in.cp.deadline_ms, timed_out(), &resp);
      return;
    }
    engine.wake_step_at(in, next);
  }

  // The wait before the next attempt: `every`, grown by the backoff, capped, jittered.
  static int64_t interval_ms(const Instance& in, const Poll& poll) {
    double grown =
        static_cast<double>(poll.every_ms) *
        std::pow(poll.backoff_factor, std::max(1.0, static_cast<double>(in.cp.attempts)) - 1);
    if (poll.max_interval_ms != 0) {
      grown = std::min(grown, static_cast<double>(poll.max_interval_ms));
    }
    return static_cast<int64_t>(worker::jittered_ms(static_cast<uint64_t>(grown), poll.jitter,
                                                    in.run->jitter_seed, in.index, in.cp.step,
                                                    in.cp.attempts));
  }

  // Attempts count against max_attempts: report them now and then so a resume continues the
  // count. After a crash at most a minute's worth, or a tenth of max_attempts, repeats.
  // Instances started together poll in step: each reports at its own phase (its index), so
  // that 100,000 of them do not all report in the same second and flood the master.
  static void report_now_and_then(Engine& engine, Instance& in, const Poll& poll) {
    uint64_t every = std::clamp<uint64_t>(kProgressEveryMs / std::max<uint64_t>(1, poll.every_ms),
                                          1, std::max(1, poll.max_attempts / 10));
    if ((in.cp.attempts + in.index) % every == 0) engine.report_progress(in);
  }
};

}  // namespace

CORRAL_REGISTER_STEP_RUNNER(PollRunner, "poll")

}  // namespace corral::steps::poll
