// Running a "callback" step: the instance waits, as a sleeping one does (one wake-up in the
// engine's queue), until the master passes on the call of its URL, then judges the caller's
// JSON body like a response: `abort_if`, `expect`, captures. What arrived is in the instance's
// checkpoint (ipc::Checkpoint::callback), so it moves with the instance; the master also keeps
// it in its journal and hands it to whichever worker resumes the instance.
#include "config/config.h"
#include "shared/proc.h"
#include "steps/callback/callback.h"
#include "worker/engine/instance.h"
#include "worker/engine/step_runner.h"

namespace corral::steps::callback {
namespace {

using worker::Engine;
using worker::Instance;

// What reached this step of the instance, if anything did.
const nlohmann::json* received(const Instance& in) {
  const nlohmann::json& got = in.cp.callback;
  if (!got.is_object() || got.value("step", uint64_t{0}) != in.cp.step) return nullptr;
  return &got;
}

class CallbackRunner final : public worker::StepRunner {
 public:
  void run(Engine& engine, Instance& in) const override {
    if (engine.ended_past_deadline(in)) return;
    wait_or_judge(engine, in);
  }

  // Its time came (the deadline, a heartbeat due), or the master passed on a call.
  void on_wake(Engine& engine, Instance& in) const override { wait_or_judge(engine, in); }

  // A step resumed elsewhere starts a new heartbeat period: a ping the caller sent to the
  // worker that died is not known here.
  void resumed(Instance& in) const override {
    ipc::Checkpoint& cp = in.cp;
    if (!cp.callback.is_object() || cp.callback.value("step", uint64_t{0}) != cp.step) {
      cp.callback = {{"step", cp.step}};
    }
    cp.callback["heartbeat_ms"] = unix_ms_now();
  }

  std::string_view limit_word() const override { return "callback"; }

 private:
  static void wait_or_judge(Engine& engine, Instance& in) {
    const nlohmann::json* got = received(in);
    if (got != nullptr && got->contains("body")) {
      judge(engine, in, (*got)["body"]);
      return;
    }
    int64_t now = unix_ms_now();
    if (now >= in.cp.deadline_ms) {
      engine.finish(in, ipc::Outcome::kFailed,
                    "callback not called within " +
                        config::format_duration_ms(in.step().limit_ms));
      return;
    }
    int64_t wake = in.cp.deadline_ms;
    const uint64_t heartbeat = in.step().spec_as<Callback>().heartbeat_ms;
    if (heartbeat != 0) {
      int64_t last = got != nullptr ? got->value("heartbeat_ms", in.cp.step_started_ms)
                                    : in.cp.step_started_ms;
      int64_t due = last + static_cast<int64_t>(heartbeat);
      if (now >= due) {
        engine.finish(in, ipc::Outcome::kFailed,
                      "callback: no heartbeat within " + config::format_duration_ms(heartbeat));
        return;
      }
      wake = std::min(wake, due);
    }
    engine.wake_step_at(in, wake);
  }

  static void judge(Engine& engine, Instance& in, const nlohmann::json& body) {
    std::string text = body.dump();
    scenario::ResponseView view;
    view.body = text;
    view.json = &body;
    engine.judge_result(in, view, "");
  }
};

}  // namespace

CORRAL_REGISTER_STEP_RUNNER(CallbackRunner, "callback")

}  // namespace corral::steps::callback
