// POST /callbacks/<token>: a system under test completes an instance's callback step
// (steps/callback). The token is the credential (shared/callback/token.h), so the route is
// open: it needs no API token. A call is journaled before it is answered 202 and before the
// worker hears of it: from then on it survives a worker's death (the master hands it to the
// next worker with the instance's checkpoint) and a restart of the master (it is read back
// with the run). A caller that got no answer calls again; a repeated call is answered 409.
#include <spdlog/spdlog.h>

#include "config/config.h"
#include "master/journal/journal.h"
#include "master/run_service.h"
#include "shared/callback/token.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

}  // namespace

std::optional<std::string> RunService::callback_problem(const scenario::Scenario& s) const {
  for (const scenario::Step& step : s.steps) {
    if (!step.kind->takes_calls) continue;
    if (workers_.callback_base().empty()) {
      return "steps[" + std::to_string(step.index) +
             "]: a callback step needs a URL the system under test can call: set listen, or "
             "callback_base";
    }
  }
  return std::nullopt;
}

// The instance and step a token is for, when it may still be called; else answers and nullopt.
std::optional<callback::Address> RunService::callback_target(const ApiCall& c) {
  auto a = callback::check(callback_key_, c.args[0]);
  Run* run = a ? runs_.find(a->run) : nullptr;
  if (run == nullptr || a->index >= run->size || a->step >= run->scenario->steps.size() ||
      !run->scenario->steps[a->step].kind->takes_calls) {
    c.respond.send(Response::error(404, "no such callback"));
    return std::nullopt;
  }
  if (run->finished() || !run->whole || is_terminal(run->instance(a->index).state) ||
      run->instance(a->index).next_step > a->step) {
    c.respond.send(Response::error(410, "this callback's step has ended"));
    return std::nullopt;
  }
  return a;
}

void RunService::api_callback(const ApiCall& c) {
  auto a = callback_target(c);
  if (!a) return;
  Run& run = *runs_.find(a->run);
  if (auto held = run.callbacks.find(a->index);
      held != run.callbacks.end() && held->second["step"] == a->step) {
    c.respond.send(Response::error(409, "this callback was called already"));
    return;
  }
  json body = c.req.body.empty() ? json() : json::parse(c.req.body, nullptr, false);
  if (body.is_discarded()) {
    c.respond.send(Response::error(400, "the body must be JSON (or empty)"));
    return;
  }
  run.callbacks[a->index] = {{"step", a->step}, {"body", body}};
  spdlog::info("run {} instance {}: callback of step {} called", a->run, a->index, a->step);
  ipc::Callback frame{a->run, a->index, a->step, false, body};
  auto deliver = [this, frame = std::move(frame), respond = c.respond]() {
    json answer = {{"accepted", true}};
    if (journal_ && !journal_->health().ok) {
      // Held in memory and retried, as a run is: lost only if the master dies first.
      answer["warning"] = "the journal cannot be written: " + journal_->health().error;
    }
    respond.send(Response::json(202, answer));
    Run* r = runs_.find(frame.run);
    if (r == nullptr) return;
    const InstanceRecord& in = r->instance(frame.index);
    if (in.state == InstanceState::kRunning) {
      workers_.send_to(in.worker, ipc::MessageType::kCallback, ipc::to_json(frame));
    }
  };
  if (!journal_) {
    deliver();
    return;
  }
  journal::CallbackRow row{a->run, a->index, a->step, body.dump(), unix_ms_now()};
  journal_->write([row](journal::Store& s) { return s.put_callback(row); },
                  {a->run, a->index});
  // Answered, and passed on, once the journal has tried it (writes are tried in order).
  journal_->read([](journal::Store&) {}, std::move(deliver));
}

void RunService::api_callback_heartbeat(const ApiCall& c) {
  auto a = callback_target(c);
  if (!a) return;
  const InstanceRecord& in = runs_.find(a->run)->instance(a->index);
  if (in.state == InstanceState::kRunning) {
    workers_.send_to(in.worker, ipc::MessageType::kCallback,
                     ipc::to_json(ipc::Callback{a->run, a->index, a->step, true, nullptr}));
  }
  c.respond.send(Response::json(202, {{"accepted", true}}));
}

}  // namespace corral::master
