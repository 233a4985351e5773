#include "worker/engine/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "config/config.h"
#include "config/scenario/parse.h"
#include "shared/proc.h"
#include "shared/uv/handle.h"

namespace corral::worker {

using scenario::StepKind;

struct Instance {
  enum class Next { kSend, kStepDone };

  Engine* engine;
  Engine::Run* run;
  uint64_t serial;
  uint32_t index;
  Checkpoint cp;
  uint32_t tries = 0;  // tries of the current request (the first plus retries)
  Next next = Next::kSend;
  uv::Handle<uv_timer_t> timer;
};

namespace {

// The variables one instance's templates read: its captures, then the run's vars.
class InstanceVars final : public scenario::Vars {
 public:
  InstanceVars(const Instance& in) : in_(in) {}
  const nlohmann::json* find(std::string_view name) const override {
    std::string key(name);
    if (in_.cp.vars.is_object()) {
      if (auto it = in_.cp.vars.find(key); it != in_.cp.vars.end()) return &*it;
    }
    const auto& vars = in_.run->vars;
    if (auto it = vars.find(key); it != vars.end()) return &*it;
    return nullptr;
  }
  uint64_t instance() const override { return in_.index; }
  std::string_view run() const override { return in_.run->id; }

 private:
  const Instance& in_;
};

uint64_t grown(uint64_t base, double factor, uint32_t n, uint64_t cap) {
  double v = static_cast<double>(base) * std::pow(factor, n);
  if (cap != 0) v = std::min(v, static_cast<double>(cap));
  return static_cast<uint64_t>(v);
}

}  // namespace

Engine::Engine(uv_loop_t* loop, CurlClient& http, Emit emit)
    : loop_(loop), http_(http), emit_(std::move(emit)) {}

Engine::~Engine() = default;

Status Engine::define_run(const std::string& run, const nlohmann::json& doc,
                          const nlohmann::json& vars) {
  std::set<std::string> extra;
  if (vars.is_object()) {
    for (const auto& [k, v] : vars.items()) extra.insert(k);
  }
  auto parsed = scenario::parse_scenario(doc, extra);
  if (!parsed) return parsed.status();
  auto r = std::make_unique<Run>();
  r->id = run;
  r->scenario = *parsed;
  r->vars = (*parsed)->vars;
  if (vars.is_object()) r->vars.update(vars);
  runs_[run] = std::move(r);
  return Status::ok();
}

Status Engine::start(const std::string& run, uint32_t index, Checkpoint cp) {
  auto it = runs_.find(run);
  if (it == runs_.end()) return invalid_argument("unknown run \"" + run + "\"");
  if (cp.step >= it->second->scenario->steps.size()) {
    return invalid_argument("instance " + std::to_string(index) + " checkpoint step " +
                            std::to_string(cp.step) + " is past the last step");
  }
  auto in = std::make_unique<Instance>();
  in->engine = this;
  in->run = it->second.get();
  in->serial = next_serial_++;
  in->index = index;
  in->cp = std::move(cp);
  if (in->cp.started_ms == 0) in->cp.started_ms = unix_ms_now();
  uv_timer_init(loop_, in->timer.get());
  in->timer.set_live(in.get());
  Instance& ref = *in;
  instances_[in->serial] = std::move(in);
  ref.run->active += 1;
  ipc::InHandScope scope(in_hand_, ref.run->id, ref.index);
  run_step(ref);
  return Status::ok();
}

void Engine::run_step(Instance& in) {
  if (poison_ && in.index == *poison_) std::abort();
  const auto& step = in.run->scenario->steps[in.cp.step];
  int64_t now = unix_ms_now();
  if (in.cp.step_started_ms == 0) {
    in.cp.step_started_ms = now;
    in.cp.attempts = 0;
    in.cp.poll_deadline_ms = step.kind == StepKind::kPoll && step.poll.timeout_ms
                                 ? now + int64_t(step.poll.timeout_ms)
                                 : 0;
  }
  in.tries = 0;
  switch (step.kind) {
    case StepKind::kSleep:
      in.next = Instance::Next::kStepDone;
      wait_until(in, in.cp.step_started_ms + static_cast<int64_t>(step.sleep_ms));
      return;
    case StepKind::kPoll:
      // A deadline that passed while the instance was not running (resumed late) still counts.
      if (in.cp.poll_deadline_ms != 0 && now >= in.cp.poll_deadline_ms) {
        finish(in, "failed",
               "poll timed out after " + config::format_duration_ms(step.poll.timeout_ms), 0);
        return;
      }
      send(in);
      return;
    case StepKind::kRequest:
      send(in);
      return;
  }
}

void Engine::wait_until(Instance& in, int64_t at_ms) {
  // libuv counts timers from the loop's cached time, which may lag the wall clock read here;
  // refresh it so a timer never fires early.
  uv_update_time(loop_);
  int64_t delay = std::max<int64_t>(0, at_ms - unix_ms_now());
  uv_timer_start(
      in.timer.get(),
      [](uv_timer_t* t) {
        if (auto* self = uv::owner_of<Instance>(t)) self->engine->on_timer(*self);
      },
      static_cast<uint64_t>(delay), 0);
}

void Engine::on_timer(Instance& in) {
  ipc::InHandScope scope(in_hand_, in.run->id, in.index);
  if (in.next == Instance::Next::kStepDone) {
    // The loop's clock and the wall clock round differently: never end a sleep early.
    const auto& step = in.run->scenario->steps[in.cp.step];
    int64_t end = in.cp.step_started_ms + static_cast<int64_t>(step.sleep_ms);
    if (unix_ms_now() < end) {
      wait_until(in, end);
      return;
    }
    step_passed(in, nullptr, 0);
  } else {
    send(in);
  }
}

HttpRequest Engine::build_request(const Instance& in) const {
  const auto& spec = in.run->scenario->steps[in.cp.step].request;
  InstanceVars vars(in);
  HttpRequest req;
  req.method = spec.method;
  req.url = spec.url.expand(vars);
  req.timeout_ms = spec.timeout_ms;
  for (const auto& [name, value] : spec.headers)
    req.headers.push_back(name + ": " + value.expand(vars));
  if (spec.json) {
    req.body = spec.json->expand(vars).dump();
  } else if (spec.body) {
    req.body = spec.body->expand(vars);
  }
  return req;
}

void Engine::send(Instance& in) {
  const auto& step = in.run->scenario->steps[in.cp.step];
  if (in.tries == 0 && step.kind == StepKind::kPoll) in.cp.attempts += 1;
  if (step.kind == StepKind::kRequest) in.cp.attempts += 1;
  in.tries += 1;
  in.next = Instance::Next::kSend;
  uint64_t serial = in.serial;
  // Built when curl has room for it (see CurlClient::send_lazy); by then the instance may
  // have been cancelled or handed back.
  http_.send_lazy(
      [this, serial]() -> std::optional<HttpRequest> {
        auto it = instances_.find(serial);
        if (it == instances_.end()) return std::nullopt;
        const Instance& due = *it->second;
        ipc::InHandScope scope(in_hand_, due.run->id, due.index);
        return build_request(due);
      },
      [this, serial](HttpResponse&& resp) { on_response(serial, std::move(resp)); });
}

bool Engine::retry_later(Instance& in, const std::string& why) {
  const auto& retry = in.run->scenario->steps[in.cp.step].retry;
  if (static_cast<int>(in.tries) >= retry.attempts) return false;
  uint64_t delay =
      grown(retry.initial_interval_ms, retry.backoff_factor, in.tries - 1, retry.max_interval_ms);
  spdlog::debug("run {} instance {} step {}: retrying in {} ms: {}", in.run->id, in.index,
                in.cp.step, delay, why);
  in.next = Instance::Next::kSend;
  wait_until(in, unix_ms_now() + static_cast<int64_t>(delay));
  return true;
}

void Engine::on_response(uint64_t serial, HttpResponse&& resp) {
  auto it = instances_.find(serial);
  if (it == instances_.end()) return;  // cancelled while in flight
  Instance& in = *it->second;
  ipc::InHandScope scope(in_hand_, in.run->id, in.index);
  const auto& step = in.run->scenario->steps[in.cp.step];
  const auto& on = step.retry.on;

  if (!resp.error.empty()) {
    if (on.transport && retry_later(in, resp.error)) return;
    finish(in, "errored",
           "transport error: " + resp.error + " (" + std::to_string(in.tries) + " tries)", 0);
    return;
  }
  bool server_error = resp.status >= 500, client_error = resp.status >= 400 && resp.status < 500;
  if (((server_error && on.server_error) || (client_error && on.client_error)) &&
      retry_later(in, "status " + std::to_string(resp.status))) {
    return;
  }

  nlohmann::json body_json;
  if (step.reads_json) body_json = nlohmann::json::parse(resp.body, nullptr, false);
  scenario::ResponseView view;
  view.status = resp.status;
  view.headers = resp.headers;
  view.body = resp.body;
  view.json = step.reads_json && !body_json.is_discarded() ? &body_json : nullptr;

  int64_t now = unix_ms_now();
  if (step.kind == StepKind::kRequest) {
    auto r = scenario::all_hold(step.expect, view);
    if (!r.held) {
      if (on.expect && retry_later(in, r.explanation)) return;
      finish(in, "failed", "expect: " + r.explanation, resp.status);
      return;
    }
  } else if (step.kind == StepKind::kPoll) {
    if (auto bad = scenario::first_holding(step.poll.fail_if, view)) {
      finish(in, "failed", "fail_if held: " + bad->explanation, resp.status);
      return;
    }
    auto r = scenario::all_hold(step.poll.until, view);
    if (!r.held) {
      const auto& poll = step.poll;
      if (poll.max_attempts != 0 && static_cast<int>(in.cp.attempts) >= poll.max_attempts) {
        finish(
            in, "failed",
            "until not met after " + std::to_string(in.cp.attempts) + " attempts: " + r.explanation,
            resp.status);
        return;
      }
      if (in.cp.poll_deadline_ms != 0 && now >= in.cp.poll_deadline_ms) {
        finish(in, "failed",
               "poll timed out after " + config::format_duration_ms(poll.timeout_ms) + ": " +
                   r.explanation,
               resp.status);
        return;
      }
      int64_t next = now + static_cast<int64_t>(grown(poll.every_ms, poll.backoff_factor,
                                                      in.cp.attempts - 1, poll.max_interval_ms));
      if (in.cp.poll_deadline_ms != 0) next = std::min(next, in.cp.poll_deadline_ms);
      in.tries = 0;
      in.next = Instance::Next::kSend;
      wait_until(in, next);
      return;
    }
  }
  for (const auto& c : step.captures) {
    auto v = scenario::capture(c, view);
    if (!v) {
      finish(in, "failed", v.status().message(), resp.status);
      return;
    }
    if (!in.cp.vars.is_object()) in.cp.vars = nlohmann::json::object();
    in.cp.vars[c.name] = std::move(*v);
  }
  step_passed(in, &resp, now - in.cp.step_started_ms);
}

void Engine::step_passed(Instance& in, const HttpResponse* resp, int64_t until_ms) {
  const auto& steps = in.run->scenario->steps;
  nlohmann::json ev = {{"t", "step"},
                       {"run", in.run->id},
                       {"i", in.index},
                       {"step", in.cp.step},
                       {"state", "passed"},
                       {"attempts", in.cp.attempts},
                       {"started_ms", in.cp.step_started_ms},
                       {"ended_ms", unix_ms_now()},
                       {"status", resp != nullptr ? resp->status : 0}};
  if (steps[in.cp.step].kind == StepKind::kPoll) ev["until_ms"] = until_ms;
  if (!steps[in.cp.step].captures.empty()) ev["vars"] = in.cp.vars;
  emit_(std::move(ev));
  in.cp.step += 1;
  in.cp.step_started_ms = 0;
  in.cp.attempts = 0;
  in.cp.poll_deadline_ms = 0;
  if (in.cp.step >= steps.size()) {
    end_instance(in, "passed", "");
    return;
  }
  run_step(in);
}

void Engine::finish(Instance& in, const char* state, const std::string& reason, int status) {
  emit_({{"t", "step"},
         {"run", in.run->id},
         {"i", in.index},
         {"step", in.cp.step},
         {"state", state},
         {"attempts", in.cp.attempts},
         {"started_ms", in.cp.step_started_ms},
         {"ended_ms", unix_ms_now()},
         {"status", status},
         {"reason", reason}});
  end_instance(in, state, reason);
}

void Engine::end_instance(Instance& in, const char* state, const std::string& reason) {
  emit_({{"t", "done"},
         {"run", in.run->id},
         {"i", in.index},
         {"state", state},
         {"reason", reason},
         {"started_ms", in.cp.started_ms},
         {"ended_ms", unix_ms_now()}});
  in.run->active -= 1;
  instances_.erase(in.serial);  // closes the timer; `in` is gone after this line
}

void Engine::cancel_run(const std::string& run) {
  auto r = runs_.find(run);
  if (r == runs_.end()) return;
  for (auto it = instances_.begin(); it != instances_.end();) {
    it = it->second->run == r->second.get() ? instances_.erase(it) : std::next(it);
  }
  runs_.erase(r);
}

nlohmann::json Engine::take_all() {
  nlohmann::json out = nlohmann::json::object();
  for (auto& [serial, in] : instances_) {
    out[in->run->id][std::to_string(in->index)] = to_json(in->cp);
  }
  instances_.clear();
  for (auto& [id, r] : runs_) r->active = 0;
  return out;
}

}  // namespace corral::worker
