// The engine's branches (steps/parallel): instances of their own inside an instance's step,
// whose positions travel in that instance's checkpoint.
#include <stdexcept>

#include "shared/ipc/vars.h"
#include "shared/proc.h"
#include "worker/engine/engine.h"
#include "worker/engine/instance.h"

namespace corral::worker {
namespace {

using nlohmann::json;

[[noreturn]] void bad_checkpoint(size_t b, const std::string& what) {
  throw std::runtime_error("its checkpoint's branches[" + std::to_string(b) + "]: " + what);
}

}  // namespace

std::vector<Engine::Branch>& Engine::fork(Instance& in, const std::vector<size_t>& first) {
  const json& saved = in.cp.branches;
  if (!saved.is_null() && saved.size() != first.size()) {
    throw std::runtime_error("its checkpoint has " + std::to_string(saved.size()) +
                             " branches, the step " + std::to_string(first.size()));
  }
  const auto& steps = in.run->scenario->steps;
  std::vector<Branch> list(first.size());
  for (size_t b = 0; b < first.size(); ++b) {
    Branch& br = list[b];
    br.first = first[b];
    if (saved.is_null() || saved[b].is_null()) continue;
    const json& e = saved[b];
    json passed;
    if (auto f = e.find("failed"); f != e.end()) {
      br.state = Branch::State::kFailed;
      br.reason = f->is_string() ? f->get<std::string>() : f->dump();
      auto o = ipc::outcome_from(e.value("outcome", "failed"));
      br.outcome = o && *o != ipc::Outcome::kPassed ? *o : ipc::Outcome::kFailed;
      continue;
    }
    if (auto p = e.find("passed"); p != e.end()) {
      passed = *p;
    } else if (auto c = e.find("checkpoint"); c != e.end()) {
      auto cp = ipc::checkpoint_from_json(*c, "branch");
      if (!cp) bad_checkpoint(b, cp.status().message());
      size_t end = steps[br.first].list_end;
      if (cp->step < br.first || cp->step > end) bad_checkpoint(b, "step out of the branch");
      if (cp->step < end) {
        br.from = *c;  // started, not done
        continue;
      }
      passed = cp->vars;  // its last step passed
    } else {
      bad_checkpoint(b, "expected \"checkpoint\", \"passed\" or \"failed\"");
    }
    auto vars = ipc::vars_from_wire(passed, secrets_);
    if (!vars) bad_checkpoint(b, vars.status().message());
    br.state = Branch::State::kPassed;
    br.vars = std::move(*vars);
  }
  in.cp.branches = nullptr;
  return forks_[in.serial] = std::move(list);
}

std::vector<Engine::Branch>* Engine::branches(const Instance& in) {
  auto it = forks_.find(in.serial);
  return it == forks_.end() ? nullptr : &it->second;
}

void Engine::start_branch(Instance& in, size_t b) {
  Branch& br = forks_.at(in.serial).at(b);
  auto child = std::make_unique<Instance>();
  child->engine = this;
  child->run = in.run;
  child->serial = next_serial_++;
  child->index = in.index;
  child->branch = true;
  if (br.from.is_null()) {
    child->cp.step = static_cast<uint32_t>(br.first);
    child->cp.started_ms = in.cp.started_ms;
  } else {
    auto cp = ipc::checkpoint_from_json(br.from, "branch");
    if (!cp) bad_checkpoint(b, cp.status().message());
    auto vars = ipc::vars_from_wire(cp->vars, secrets_);
    if (!vars) bad_checkpoint(b, vars.status().message());
    child->cp = std::move(*cp);
    child->cp.vars = std::move(*vars);
    rewind(*in.run->scenario, child->cp);
    in.run->runners[child->cp.step]->resumed(*child);
    br.from = nullptr;
  }
  br.state = Branch::State::kRunning;
  br.serial = child->serial;
  branch_of_[child->serial] = {in.serial, b};
  Instance& ref = *child;
  instances_[ref.serial] = std::move(child);
  // Its step runs from the loop: a branch that ended at once would otherwise end inside the
  // runner that starts it. A branch that moved while it waited waits out the rest.
  int64_t wake = ref.cp.wake_ms;
  ref.cp.wake_ms = 0;
  if (ref.cp.step_started_ms != 0 && wake > unix_ms_now()) {
    if (ref.cp.deadline_ms != 0) wake = std::min(wake, ref.cp.deadline_ms);
    wake_step_at(ref, wake);
    return;
  }
  ref.next = Instance::Next::kRunStep;
  wait_until(ref, unix_ms_now());
}

void Engine::close_fork(const Instance& in) {
  auto it = forks_.find(in.serial);
  if (it == forks_.end()) return;
  std::vector<uint64_t> running;
  for (const Branch& br : it->second) {
    if (br.state == Branch::State::kRunning) running.push_back(br.serial);
  }
  forks_.erase(it);  // first: nothing reports into it any more
  for (uint64_t serial : running) drop_branch(serial);
}

const Instance* Engine::parent_of(const Instance& in) const {
  if (!in.branch) return nullptr;
  auto of = branch_of_.find(in.serial);
  if (of == branch_of_.end()) return nullptr;
  auto it = instances_.find(of->second.parent);
  return it == instances_.end() ? nullptr : it->second.get();
}

const Instance& Engine::root_of(const Instance& in) const {
  const Instance* at = &in;
  while (const Instance* up = parent_of(*at)) at = up;
  return *at;
}

void Engine::drop_branch(uint64_t serial) {
  auto it = instances_.find(serial);
  if (it == instances_.end()) return;
  release(*it->second);  // a branch in a parallel step drops its own branches
  timeouts_.erase(serial);
  branch_of_.erase(serial);
  instances_.erase(serial);
}

void Engine::emit_in_branch(const Instance& owner, ipc::Event&& ev) {
  ev.in_branch = true;
  ev.vars = nullptr;  // the branch's captures are in the checkpoint
  ev.checkpoint = checkpoint_of(root_of(owner));
  emit_(std::move(ev));
}

void Engine::branch_done(Instance& child, ipc::Outcome outcome, const std::string& reason,
                         std::optional<ipc::Event> ev) {
  const BranchOf of = branch_of_.at(child.serial);
  Branch& br = forks_.at(of.parent).at(of.b);
  br.serial = 0;
  if (outcome == ipc::Outcome::kPassed) {
    br.state = Branch::State::kPassed;
    br.vars = std::move(child.cp.vars);
  } else {
    br.state = Branch::State::kFailed;
    br.outcome = outcome;
    br.reason = secrets_.redact(reason);
  }
  drop_branch(child.serial);  // `child` is gone after this line
  if (ev) emit_in_branch(*instances_.at(of.parent), std::move(*ev));
  with_instance(of.parent, "a parallel step",
                [&](Instance& parent) { parent.runner().branch_ended(*this, parent, of.b); });
}

json Engine::branches_to_json(const std::vector<Branch>& list) const {
  json out = json::array();
  for (const Branch& br : list) {
    switch (br.state) {
      case Branch::State::kWaiting:
        out.push_back(br.from.is_null() ? json() : json{{"checkpoint", br.from}});
        break;
      case Branch::State::kRunning:
        out.push_back({{"checkpoint", ipc::to_json(checkpoint_of(*instances_.at(br.serial)))}});
        break;
      case Branch::State::kPassed:
        out.push_back({{"passed", ipc::vars_to_wire(br.vars, secrets_)}});
        break;
      case Branch::State::kFailed:
        out.push_back({{"failed", br.reason}, {"outcome", ipc::to_string(br.outcome)}});
        break;
    }
  }
  return out;
}

}  // namespace corral::worker
