// Running a "parallel" step: its branches run as branches of the instance (Engine::fork), at
// most max_concurrent at once; the step passes once `needed` of them passed, and fails once
// that can no longer happen. Either way the branches still running are cancelled.
#include "steps/parallel/parallel.h"
#include "worker/engine/instance.h"
#include "worker/engine/step_runner.h"

namespace corral::steps::parallel {
namespace {

using worker::Engine;
using worker::Instance;
using BranchState = Engine::Branch::State;

class ParallelRunner final : public worker::StepRunner {
 public:
  // A fresh step, or one resumed from a checkpoint that says where each branch was.
  void run(Engine& engine, Instance& in) const override {
    if (engine.ended_past_deadline(in)) return;
    std::vector<size_t> first;
    for (const auto& b : in.step().branches) first.push_back(b.first);
    engine.fork(in, first);
    if (in.cp.deadline_ms != 0) {
      engine.time_out_at(in, in.cp.deadline_ms, engine.timed_out_reason(in, -1));
    }
    settle(engine, in);
  }

  void branch_ended(Engine& engine, Instance& in, size_t /*b*/) const override {
    settle(engine, in);
  }

  void left(Engine& engine, const Instance& in) const override { engine.close_fork(in); }

  std::string_view limit_word() const override { return "parallel"; }

 private:
  // Joins, fails, or starts the branches waiting for a turn.
  static void settle(Engine& engine, Instance& in) {
    const Parallel& p = in.step().spec_as<Parallel>();
    auto& branches = *engine.branches(in);
    size_t passed = 0, open = 0, running = 0;
    for (const auto& br : branches) {
      passed += br.state == BranchState::kPassed ? 1 : 0;
      open += br.state == BranchState::kWaiting || br.state == BranchState::kRunning ? 1 : 0;
      running += br.state == BranchState::kRunning ? 1 : 0;
    }
    if (passed >= p.needed) {
      join(engine, in, branches);
      return;
    }
    if (passed + open < p.needed) {
      fail(engine, in, p, branches);
      return;
    }
    for (size_t b = 0; b < branches.size() && running < p.max_concurrent; ++b) {
      if (branches[b].state != BranchState::kWaiting) continue;
      engine.start_branch(in, b);
      ++running;
    }
  }

  // Every branch that passed hands its captures to the instance as "<branch>.<name>".
  static void join(Engine& engine, Instance& in, const std::vector<Engine::Branch>& branches) {
    if (!in.cp.vars.is_object()) in.cp.vars = nlohmann::json::object();
    for (size_t b = 0; b < branches.size(); ++b) {
      if (branches[b].state != BranchState::kPassed || !branches[b].vars.is_object()) continue;
      for (const auto& [name, value] : branches[b].vars.items()) {
        in.cp.vars[in.step().branches[b].name + "." + name] = value;
      }
    }
    engine.close_fork(in);  // cancels the branches still running
    engine.step_passed(in, nullptr, -1);
  }

  // "branch "eu": expect: status is 500, expected 200"; with a join short of all, every
  // failed branch's reason.
  static void fail(Engine& engine, Instance& in, const Parallel& p,
                   const std::vector<Engine::Branch>& branches) {
    std::string reason;
    ipc::Outcome outcome = ipc::Outcome::kFailed;
    size_t failed = 0;
    for (size_t b = 0; b < branches.size(); ++b) {
      if (branches[b].state != BranchState::kFailed) continue;
      ++failed;
      if (branches[b].outcome == ipc::Outcome::kErrored) outcome = ipc::Outcome::kErrored;
      reason += (reason.empty() ? "" : "; ") + std::string("branch \"") + in.step().branches[b].name +
                "\": " + branches[b].reason;
    }
    if (p.needed < branches.size()) {
      reason = std::to_string(failed) + " of " + std::to_string(branches.size()) +
               " branches failed, " + std::to_string(p.needed) + " must pass: " + reason;
    }
    engine.close_fork(in);
    engine.finish(in, outcome, reason);
  }
};

}  // namespace

CORRAL_REGISTER_STEP_RUNNER(ParallelRunner, "parallel")

}  // namespace corral::steps::parallel
