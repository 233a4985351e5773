#include "worker/engine/step_runner.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>

#include "worker/engine/instance.h"

namespace corral::worker {
namespace {

// A function-local static: runners register from other files' static initialisers.
std::map<std::string, std::unique_ptr<StepRunner>, std::less<>>& table() {
  static std::map<std::string, std::unique_ptr<StepRunner>, std::less<>> runners;
  return runners;
}

}  // namespace

// A runner that never asks for a wake-up, or never sends, gets none: reaching these is a bug
// in the engine, which ends the instance (errored) rather than the worker.
void StepRunner::on_wake(Engine& /*engine*/, Instance& in) const {
  throw std::logic_error("a \"" + std::string(in.step().kind->name) +
                         "\" step woke up without asking to");
}

void StepRunner::on_response(Engine& /*engine*/, Instance& in, HttpResponse&& /*resp*/) const {
  throw std::logic_error("a \"" + std::string(in.step().kind->name) +
                         "\" step got a response to a request it did not send");
}

bool register_step_runner(std::string_view kind, std::unique_ptr<StepRunner> runner) {
  if (!table().emplace(std::string(kind), std::move(runner)).second) {
    std::fprintf(stderr, "corral: step runner '%.*s' registered twice\n",
                 static_cast<int>(kind.size()), kind.data());
    std::abort();
  }
  return true;
}

const StepRunner* find_step_runner(std::string_view kind) {
  auto it = table().find(kind);
  return it == table().end() ? nullptr : it->second.get();
}

}  // namespace corral::worker
