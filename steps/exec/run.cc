// Running an "exec" step: the command starts when the worker has room for it (at most twice
// the CPUs at once, the rest wait in order), and its exit code and output are judged like a
// response: `expect` (else exit code 0 passes), `abort_if`, captures from stdout. The step's
// deadline kills the process group; so does cancelling the run or moving the instance. A
// resumed exec step runs its command again from the start (at-least-once).
#include <uv.h>

#include <deque>
#include <unordered_map>

#include "config/config.h"
#include "shared/proc.h"
#include "steps/exec/child.h"
#include "steps/exec/exec.h"
#include "worker/engine/instance.h"
#include "worker/engine/step_runner.h"

namespace corral::steps::exec {
namespace {

using worker::Engine;
using worker::Instance;

// The children of one engine: at most `max_running` at once, the rest in order of arrival.
class Children final : public worker::StepRunner::State {
 public:
  using Finished = std::function<void(uint64_t serial, Result<Outcome>&&)>;
  Children(uv_loop_t* loop, size_t max_running, Finished finished)
      : loop_(loop), max_running_(max_running), finished_(std::move(finished)) {}

  void start(uint64_t serial, Command cmd) {
    queued_.emplace_back(serial, std::move(cmd));
    start_queued();
  }
  // Kills its command, or takes it out of the queue.
  void forget(uint64_t serial) {
    if (running_.erase(serial) == 0) {
      std::erase_if(queued_, [&](const auto& q) { return q.first == serial; });
    }
    start_queued();
  }

 private:
  void start_queued() {
    while (running_.size() < max_running_ && !queued_.empty()) {
      // (Not a structured binding: clang 14 cannot capture one in a lambda.)
      const uint64_t serial = queued_.front().first;
      Command cmd = std::move(queued_.front().second);
      queued_.pop_front();
      auto child =
          Child::start(loop_, cmd, [this, serial](Outcome&& o) { done(serial, std::move(o)); });
      if (!child) {
        finished_(serial, child.status());
        continue;
      }
      running_.emplace(serial, std::move(*child));
    }
  }

  void done(uint64_t serial, Outcome&& outcome) {
    auto it = running_.find(serial);
    std::unique_ptr<Child> child = std::move(it->second);  // lives until this call returns
    running_.erase(it);
    finished_(serial, std::move(outcome));
    start_queued();
  }

  uv_loop_t* loop_;
  size_t max_running_;
  Finished finished_;
  std::unordered_map<uint64_t, std::unique_ptr<Child>> running_;
  std::deque<std::pair<uint64_t, Command>> queued_;
};

// The worker's environment without its secrets, then the step's variables.
std::vector<std::string> environment(const Instance& in, const Exec& spec,
                                     const scenario::Vars& vars, Status& error) {
  std::vector<std::string> env = environment_without_secrets();
  env.push_back("CORRAL_RUN=" + in.run->id);
  env.push_back("CORRAL_INSTANCE=" + std::to_string(in.index));
  for (const auto& [name, value] : spec.env) env.push_back(name + "=" + value.expand(vars, &error));
  return env;
}

// "exit code 2; stderr: make: *** No rule to make target" (the last 300 bytes of stderr).
std::string describe(const Outcome& o) {
  std::string what = o.term_signal != 0 ? "killed by " + signal_name(o.term_signal)
                                        : "exit code " + std::to_string(o.exit_code);
  std::string_view err = o.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.remove_suffix(1);
  if (err.size() > 300) err = err.substr(err.size() - 300);
  return err.empty() ? what : what + "; stderr: " + std::string(err);
}

class ExecRunner final : public worker::StepRunner {
 public:
  void run(Engine& engine, Instance& in) const override {
    if (engine.ended_past_deadline(in)) return;
    const Exec& spec = in.step().spec_as<Exec>();
    worker::InstanceVars vars(in, engine.secrets());
    Status error;
    Command cmd;
    for (const auto& arg : spec.argv) cmd.argv.push_back(arg.expand(vars, &error));
    cmd.env = environment(in, spec, vars, error);
    if (spec.cwd) cmd.cwd = spec.cwd->expand(vars, &error);
    cmd.max_output = spec.max_output_bytes;
    if (!error.is_ok()) {
      engine.finish(in, ipc::Outcome::kErrored, "exec: " + error.message());
      return;
    }
    in.cp.attempts = 1;
    if (in.cp.deadline_ms != 0) {
      engine.time_out_at(in, in.cp.deadline_ms,
                         engine.timed_out_reason(in, -1) + ": the command was killed");
    }
    children(engine).start(in.serial, std::move(cmd));
  }

  void left(Engine& engine, const Instance& in) const override {
    children(engine).forget(in.serial);
  }

  std::unique_ptr<State> make_state(Engine& engine) const override {
    size_t cpus = uv_available_parallelism();
    return std::make_unique<Children>(engine.loop(), 2 * std::max<size_t>(1, cpus),
                                      [&engine](uint64_t serial, Result<Outcome>&& outcome) {
                                        engine.with_instance(
                                            serial, "an exec step's end",
                                            [&](Instance& in) { judge(engine, in, outcome); });
                                      });
  }

 private:
  Children& children(Engine& engine) const {
    return static_cast<Children&>(*engine.state_of(*this));
  }

  static void judge(Engine& engine, Instance& in, const Result<Outcome>& outcome) {
    if (!outcome) {
      engine.finish(in, ipc::Outcome::kErrored, "exec: " + outcome.status().message());
      return;
    }
    const scenario::Step& step = in.step();
    const Outcome& o = *outcome;
    nlohmann::json out_json;
    if (step.reads_json) out_json = nlohmann::json::parse(o.out, nullptr, false);
    scenario::ResponseView view;
    view.body = o.out;
    view.json = step.reads_json && !out_json.is_discarded() ? &out_json : nullptr;
    if (o.term_signal == 0) view.exit_code = o.exit_code;
    if (step.expect.empty() && (o.term_signal != 0 || o.exit_code != 0)) {
      if (auto abort = scenario::first_holding(step.abort_if, view)) {
        engine.finish(in, ipc::Outcome::kFailed, "abort_if held: " + abort->explanation);
      } else {
        engine.finish(in, ipc::Outcome::kFailed, describe(o));
      }
      return;
    }
    engine.judge_result(in, view, " (" + describe(o) + ")");
  }
};

}  // namespace

CORRAL_REGISTER_STEP_RUNNER(ExecRunner, "exec")

}  // namespace corral::steps::exec
