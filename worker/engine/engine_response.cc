// The engine's requests and responses: building a try's request from its templates, judging
// the response (expect, until, fail_if, captures, retries), and reporting what happened.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "config/config.h"
#include "shared/ipc/vars.h"
#include "shared/proc.h"
#include "worker/engine/engine.h"
#include "worker/engine/instance.h"
#include "worker/engine/jitter.h"

namespace corral::worker {
namespace {

using scenario::StepKind;

// Within this much of a deadline, a request that timed out was cut by the deadline.
constexpr int64_t kDeadlineSlackMs = 20;
// A poll with max_attempts reports its attempt count about this often.
constexpr uint64_t kProgressEveryMs = 60000;

// A header value must stay one line: a captured value could otherwise add headers.
Status check_header_value(const std::string& name, const std::string& value) {
  if (value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos) {
    return Status::ok();
  }
  return invalid_argument("header " + name +
                          ": its value holds a line break or NUL byte (from a variable)");
}

}  // namespace

Result<HttpRequest> Engine::build_request(const Instance& in) const {
  const auto& spec = in.run->scenario->steps[in.cp.step].request;
  InstanceVars vars(in, secrets_);
  Status error;
  HttpRequest req;
  req.method = spec.method;
  req.url = spec.url.expand(vars, &error);
  req.timeout_ms = spec.timeout_ms;
  req.follow_redirects = spec.follow_redirects;
  req.max_redirects = spec.max_redirects;
  req.max_response_bytes = spec.max_response_bytes;
  for (const auto& [name, value] : spec.headers) {
    std::string text = value.expand(vars, &error);
    if (Status s = check_header_value(name, text); !s && error.is_ok()) error = s;
    req.headers.push_back(name + ": " + text);
  }
  if (spec.json) {
    nlohmann::json body = spec.json->expand(vars, &error);
    if (error.is_ok()) req.body = body.dump();
  } else if (spec.body) {
    req.body = spec.body->expand(vars, &error);
  }
  if (!error.is_ok()) return error;
  return req;
}

// A load iteration's exchange, for its sink. A response of 400 or more is an error unless the
// step judges it with `expect` (whose failure the sink hears of separately); a poll's answers
// are judged by `fail_if`.
void Engine::measure(const Instance& in, const HttpResponse& resp) {
  const auto& step = in.run->scenario->steps[in.cp.step];
  ExchangeClass cls = ExchangeClass::kOk;
  if (!resp.error.empty()) {
    cls = resp.timed_out ? ExchangeClass::kTimeout : ExchangeClass::kTransport;
  } else if (resp.status >= 400 && step.kind == StepKind::kRequest && step.expect.empty()) {
    cls = ExchangeClass::kStatus;
  }
  in.run->sink->on_exchange(in.index, in.cp.step, resp, cls, uv_hrtime() - in.send_ns);
}

void Engine::on_response(Instance& in, HttpResponse&& resp) {
  const auto& step = in.run->scenario->steps[in.cp.step];
  const auto& on = step.retry.on;
  IterationSink* sink = in.run->sink;
  if (sink != nullptr) measure(in, resp);
  int64_t now = unix_ms_now();
  if (!resp.error.empty()) {
    if (in.cp.deadline_ms != 0 && now >= in.cp.deadline_ms - kDeadlineSlackMs) {
      finish(in, ipc::Outcome::kFailed, timed_out_reason(in, now - in.sent_ms));
      return;
    }
    if (on.transport && retry_later(in, resp.error)) return;
    finish(in, ipc::Outcome::kErrored,
           "transport error: " + resp.error + " (" + std::to_string(in.cp.tries) + " tries)");
    return;
  }
  nlohmann::json body_json;
  if (step.reads_json) body_json = nlohmann::json::parse(resp.body, nullptr, false);
  scenario::ResponseView view;
  view.status = resp.status;
  view.headers = resp.headers;
  view.body = resp.body;
  view.json = step.reads_json && !body_json.is_discarded() ? &body_json : nullptr;

  if (auto abort = scenario::first_holding(step.abort_if, view)) {
    if (sink != nullptr) sink->on_expect_failed(in.index, in.cp.step);
    finish(in, ipc::Outcome::kFailed, "abort_if held: " + abort->explanation, &resp);
    return;
  }
  const bool retryable = std::find(step.retry.non_retryable.begin(), step.retry.non_retryable.end(),
                                   resp.status) == step.retry.non_retryable.end();
  bool server_error = resp.status >= 500, client_error = resp.status >= 400 && resp.status < 500;
  if (retryable && ((server_error && on.server_error) || (client_error && on.client_error)) &&
      retry_later(in, "status " + std::to_string(resp.status))) {
    return;
  }

  if (step.kind == StepKind::kRequest) {
    auto r = scenario::all_hold(step.expect, view);
    if (!r.held) {
      if (sink != nullptr) sink->on_expect_failed(in.index, in.cp.step);
      if (retryable && on.expect && retry_later(in, r.explanation)) return;
      finish(in, ipc::Outcome::kFailed, "expect: " + r.explanation, &resp);
      return;
    }
  } else if (step.kind == StepKind::kPoll) {
    if (auto bad = scenario::first_holding(step.poll.fail_if, view)) {
      if (sink != nullptr) sink->on_expect_failed(in.index, in.cp.step);
      finish(in, ipc::Outcome::kFailed, "fail_if held: " + bad->explanation, &resp);
      return;
    }
    if (const scenario::Condition* pending = scenario::first_failing(step.poll.until, view)) {
      on_poll_not_held(in, *pending, view, resp);
      return;
    }
  }
  if (!capture_all(in, step, view, resp)) return;
  step_passed(in, &resp, now - in.cp.step_started_ms);
}

// Schedules the next attempt of a poll whose `until` did not hold (`pending` is the first
// condition that did not), or ends the step. The explanation, which costs more than the
// check, is worded only when the step ends or its deadline comes before the next attempt.
void Engine::on_poll_not_held(Instance& in, const scenario::Condition& pending,
                              const scenario::ResponseView& view, const HttpResponse& resp) {
  const auto& poll = in.run->scenario->steps[in.cp.step].poll;
  auto explanation = [&] { return scenario::evaluate(pending, view).explanation; };
  if (poll.max_attempts != 0 && static_cast<int>(in.cp.attempts) >= poll.max_attempts) {
    finish(in, ipc::Outcome::kFailed,
           "until not met after " + std::to_string(in.cp.attempts) + " attempts: " + explanation(),
           &resp);
    return;
  }
  int64_t now = unix_ms_now();
  auto timed_out = [&] { return timed_out_reason(in, -1) + ": " + explanation(); };
  if (in.cp.deadline_ms != 0 && now >= in.cp.deadline_ms) {
    finish(in, ipc::Outcome::kFailed, timed_out(), &resp);
    return;
  }
  double grown = static_cast<double>(poll.every_ms) *
                 std::pow(poll.backoff_factor, static_cast<double>(in.cp.attempts - 1));
  if (poll.max_interval_ms != 0) grown = std::min(grown, static_cast<double>(poll.max_interval_ms));
  int64_t next = now + static_cast<int64_t>(jittered_ms(static_cast<uint64_t>(grown), poll.jitter,
                                                        in.run->jitter_seed, in.index, in.cp.step,
                                                        in.cp.attempts));
  in.cp.tries = 0;
  if (poll.max_attempts != 0) {
    // Attempts count against max_attempts: report them now and then so a resume continues
    // the count. After a crash at most a minute's worth, or a tenth of max_attempts, repeats.
    // Instances started together poll in step: each reports at its own phase (its index), so
    // that 100,000 of them do not all report in the same second and flood the master.
    uint64_t every = std::clamp<uint64_t>(kProgressEveryMs / std::max<uint64_t>(1, poll.every_ms),
                                          1, std::max(1, poll.max_attempts / 10));
    if ((in.cp.attempts + in.index) % every == 0) report_progress(in);
  }
  if (in.cp.deadline_ms != 0 && next >= in.cp.deadline_ms) {
    time_out_at(in, in.cp.deadline_ms, timed_out());
    return;
  }
  in.next = Instance::Next::kSend;
  wait_until(in, next);
}

bool Engine::capture_all(Instance& in, const scenario::Step& step,
                         const scenario::ResponseView& view, const HttpResponse& resp) {
  for (const auto& c : step.captures) {
    auto v = scenario::capture(c, view);
    if (!v) {
      finish(in, ipc::Outcome::kFailed, v.status().message(), &resp);
      return false;
    }
    if (!in.vars.is_object()) in.vars = nlohmann::json::object();
    in.vars[c.name] = std::move(*v);
  }
  return true;
}

void Engine::step_passed(Instance& in, const HttpResponse* resp, int64_t until_ms) {
  const auto& steps = in.run->scenario->steps;
  if (in.run->sink == nullptr) emit_step_passed(in, resp, until_ms);
  in.cp.step += 1;
  in.cp.step_started_ms = 0;
  in.cp.attempts = 0;
  in.cp.tries = 0;
  in.cp.deadline_ms = 0;
  if (in.cp.step >= steps.size()) {
    end_instance(in, ipc::Outcome::kPassed, "");
    return;
  }
  if (in.run->think_ms != 0) {
    in.next = Instance::Next::kRunStep;
    wait_until(in, unix_ms_now() + static_cast<int64_t>(in.run->think_ms));
    return;
  }
  run_step(in);
}

void Engine::emit_step_passed(const Instance& in, const HttpResponse* resp, int64_t until_ms) {
  const auto& step = in.run->scenario->steps[in.cp.step];
  ipc::Event ev;
  ev.kind = ipc::EventKind::kStep;
  ev.run = in.run->id;
  ev.index = in.index;
  ev.step = in.cp.step;
  ev.outcome = ipc::Outcome::kPassed;
  ev.attempts = in.cp.attempts;
  ev.started_ms = in.cp.step_started_ms;
  ev.ended_ms = unix_ms_now();
  ev.status = resp != nullptr ? resp->status : 0;
  if (step.kind == StepKind::kPoll) ev.until_ms = until_ms;
  if (resp != nullptr && resp->redirects > 0) ev.url = secrets_.redact(resp->url);
  if (!step.captures.empty()) ev.vars = ipc::vars_to_wire(in.vars, secrets_);
  emit_(std::move(ev));
}

void Engine::report_progress(Instance& in) {
  if (in.run->sink != nullptr) return;  // an iteration does not resume elsewhere
  ipc::Event ev;
  ev.kind = ipc::EventKind::kProgress;
  ev.run = in.run->id;
  ev.index = in.index;
  ev.checkpoint = checkpoint_of(in);
  emit_(std::move(ev));
}

void Engine::finish(Instance& in, ipc::Outcome outcome, const std::string& reason,
                    const HttpResponse* resp) {
  if (in.run->sink != nullptr) {
    end_instance(in, outcome, reason);
    return;
  }
  ipc::Event ev;
  ev.kind = ipc::EventKind::kStep;
  ev.run = in.run->id;
  ev.index = in.index;
  ev.step = in.cp.step;
  ev.outcome = outcome;
  ev.attempts = in.cp.attempts;
  ev.started_ms = in.cp.step_started_ms;
  ev.ended_ms = unix_ms_now();
  ev.status = resp != nullptr ? resp->status : 0;
  if (resp != nullptr && resp->redirects > 0) ev.url = secrets_.redact(resp->url);
  ev.reason = secrets_.redact(reason);
  emit_(std::move(ev));
  end_instance(in, outcome, reason);
}

void Engine::end_instance(Instance& in, ipc::Outcome outcome, const std::string& reason) {
  if (IterationSink* sink = in.run->sink) {
    uint32_t vu = in.index;
    std::string why = reason.empty() ? std::string() : secrets_.redact(reason);
    in.run->active -= 1;
    timeout_reasons_.erase(in.serial);
    instances_.erase(in.serial);  // first: the sink may start the VU's next iteration
    sink->on_iteration_end(vu, outcome, why);
    return;
  }
  ipc::Event ev;
  ev.kind = ipc::EventKind::kDone;
  ev.run = in.run->id;
  ev.index = in.index;
  ev.outcome = outcome;
  ev.reason = secrets_.redact(reason);
  ev.started_ms = in.cp.started_ms;
  ev.ended_ms = unix_ms_now();
  emit_(std::move(ev));
  in.run->active -= 1;
  timeout_reasons_.erase(in.serial);
  instances_.erase(in.serial);  // `in` is gone after this line
}

}  // namespace corral::worker
