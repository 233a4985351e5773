// Running a "request" step: every try counts as an attempt; `expect` judges the answer.
#include "config/scenario/condition.h"
#include "worker/engine/http_step.h"
#include "worker/engine/instance.h"

namespace corral::steps::request {
namespace {

using worker::Engine;
using worker::HttpResponse;
using worker::Instance;

// A request's tries go on counting across a resume (no `resumed`), so that retry.attempts
// holds.
class RequestRunner final : public worker::HttpStepRunner {
 public:
  void count_attempt(ipc::Checkpoint& cp) const override { cp.attempts += 1; }

  void judge(Engine& engine, Instance& in, const scenario::ResponseView& view,
             const HttpResponse& resp) const override {
    const scenario::Step& step = in.step();
    auto r = scenario::all_hold(step.expect, view);
    if (!r.held) {
      engine.expect_failed(in);
      if (worker::retryable_status(step, resp.status) && step.retry.on.expect &&
          engine.retry_later(in, r.explanation)) {
        return;
      }
      engine.finish(in, ipc::Outcome::kFailed, "expect: " + r.explanation, &resp);
      return;
    }
    if (!engine.capture_all(in, step, view, &resp)) return;
    engine.step_passed(in, &resp, -1);
  }

  // Without `expect`, nothing else judges the status.
  bool status_is_error(const scenario::Step& step) const override { return step.expect.empty(); }
};

}  // namespace

CORRAL_REGISTER_STEP_RUNNER(RequestRunner, "request")

}  // namespace corral::steps::request
