// The engine's requests and responses: building a try's request from its templates, the
// judgement every kind that sends shares (transport errors, abort_if, retries, captures), and
// reporting what happened. Each kind's own judgement is in steps/<kind>/run.cc.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "config/config.h"
#include "shared/ipc/vars.h"
#include "shared/proc.h"
#include "shared/trace_context.h"
#include "worker/engine/engine.h"
#include "worker/engine/http_step.h"
#include "worker/engine/instance.h"

namespace corral::worker {
namespace {

// Within this much of a deadline, a request that timed out was cut by the deadline.
constexpr int64_t kDeadlineSlackMs = 20;

// A header value must stay one line: a captured value could otherwise add headers.
Status check_header_value(const std::string& name, const std::string& value) {
  if (value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos) {
    return Status::ok();
  }
  return invalid_argument("header " + name +
                          ": its value holds a line break or NUL byte (from a variable)");
}

}  // namespace

// One trace per instance of a run (the same on any worker), or per iteration of a load test;
// a span per request.
TraceId Engine::trace_of(const Instance& in) const {
  if (!in.run->scenario->trace_context) return {};
  const uint64_t key = in.run->sink == nullptr ? in.index : trace_salt_ ^ root_of(in).serial;
  return trace_id(in.run->jitter_seed, key);
}

std::string Engine::next_traceparent(const Instance& in) const {
  if (!in.run->scenario->trace_context) return "";
  return traceparent(trace_of(in), span_id(trace_salt_, ++spans_));
}

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
  req.tls = in.run->tls[in.cp.step];
  req.http_version = in.run->versions[in.cp.step];
  for (const auto& [name, value] : spec.headers) {
    std::string text = value.expand(vars, &error);
    if (Status s = check_header_value(name, text); !s && error.is_ok()) error = s;
    req.headers.push_back(name + ": " + text);
  }
  // A step that sends its own traceparent keeps it.
  if (!has_header(spec.headers, "traceparent")) {
    if (std::string tp = next_traceparent(in); !tp.empty())
      req.headers.push_back("traceparent: " + tp);
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

// A load iteration's exchange, for its sink. A response of 400 or more is an error when the
// step's kind says so (a step that judges it with conditions hears of a failure separately).
void Engine::measure(const Instance& in, const HttpResponse& resp, const HttpStepRunner& runner) {
  ExchangeClass cls = ExchangeClass::kOk;
  if (!resp.error.empty()) {
    cls = resp.timed_out ? ExchangeClass::kTimeout : ExchangeClass::kTransport;
  } else if (resp.status >= 400 && runner.status_is_error(in.step())) {
    cls = ExchangeClass::kStatus;
  }
  in.run->sink->on_exchange(in.index, in.cp.step, resp, cls, uv_hrtime() - in.send_ns,
                            trace_of(in));
}

void Engine::on_http_response(Instance& in, HttpResponse&& resp, const HttpStepRunner& runner) {
  const auto& step = in.step();
  const auto& on = step.retry.on;
  if (in.run->sink != nullptr) measure(in, resp, runner);
  in.step_tls_ms += static_cast<float>(resp.tls_ms);
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
    expect_failed(in);
    finish(in, ipc::Outcome::kFailed, "abort_if held: " + abort->explanation, &resp);
    return;
  }
  bool server_error = resp.status >= 500, client_error = resp.status >= 400 && resp.status < 500;
  if (retryable_status(step, resp.status) &&
      ((server_error && on.server_error) || (client_error && on.client_error)) &&
      retry_later(in, "status " + std::to_string(resp.status))) {
    return;
  }
  runner.judge(*this, in, view, resp);
}

void Engine::expect_failed(const Instance& in) {
  if (in.run->sink != nullptr) in.run->sink->on_expect_failed(in.index, in.cp.step);
}

void Engine::judge_result(Instance& in, const scenario::ResponseView& view,
                          const std::string& detail) {
  const scenario::Step& step = in.step();
  if (auto abort = scenario::first_holding(step.abort_if, view)) {
    finish(in, ipc::Outcome::kFailed, "abort_if held: " + abort->explanation);
    return;
  }
  if (auto r = scenario::all_hold(step.expect, view); !r.held) {
    finish(in, ipc::Outcome::kFailed, "expect: " + r.explanation + detail);
    return;
  }
  if (!capture_all(in, step, view, nullptr)) return;
  step_passed(in, nullptr, -1);
}

bool Engine::capture_all(Instance& in, const scenario::Step& step,
                         const scenario::ResponseView& view, const HttpResponse* resp) {
  for (const auto& c : step.captures) {
    auto v = scenario::capture(c, view);
    if (!v) {
      finish(in, ipc::Outcome::kFailed, v.status().message(), resp);
      return false;
    }
    if (!in.cp.vars.is_object()) in.cp.vars = nlohmann::json::object();
    in.cp.vars[c.name] = std::move(*v);
  }
  return true;
}

void Engine::step_passed(Instance& in, const HttpResponse* resp, int64_t until_ms) {
  const scenario::Step& step = in.step();
  std::optional<ipc::Event> ev;
  if (in.run->sink == nullptr) {
    ev = step_event(in, ipc::Outcome::kPassed, resp);
    ev->until_ms = until_ms;
    if (step.sets_vars()) ev->vars = ipc::vars_to_wire(in.cp.vars, secrets_);
  }
  // A step may end before the deadline it waited for (an exec step's command exits): that
  // wake-up is the old step's, not the next one's.
  if (in.next == Instance::Next::kTimedOut) {
    in.wake_token = 0;
    timeouts_.erase(in.serial);
  }
  if (in.cp.callback.is_object() && in.cp.callback.value("step", uint64_t{0}) <= in.cp.step) {
    in.cp.callback = nullptr;  // used, or for a step it passed
  }
  in.cp.step += 1;
  in.cp.step_started_ms = 0;
  in.cp.attempts = 0;
  in.cp.tries = 0;
  in.cp.deadline_ms = 0;
  const bool list_ended = in.cp.step >= step.list_end;
  if (in.branch && list_ended) {
    branch_done(in, ipc::Outcome::kPassed, "", std::move(ev));
    return;
  }
  if (ev) emit_step(in, std::move(*ev));
  if (list_ended) {
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

ipc::Event Engine::step_event(const Instance& in, ipc::Outcome outcome,
                              const HttpResponse* resp) const {
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
  ev.tls_us = static_cast<uint64_t>(in.step_tls_ms * 1000);
  if (resp != nullptr && resp->redirects > 0) ev.url = secrets_.redact(resp->url);
  if (resp != nullptr && outcome != ipc::Outcome::kPassed) {
    ev.body = secrets_.excerpt(resp->body, ipc::kBodyExcerptBytes);
  }
  return ev;
}

void Engine::emit_step(const Instance& in, ipc::Event&& ev) {
  if (in.branch) {
    emit_in_branch(in, std::move(ev));
    return;
  }
  emit_(std::move(ev));
}

void Engine::report_progress(Instance& in) {
  if (in.run->sink != nullptr) return;  // an iteration does not resume elsewhere
  ipc::Event ev;
  ev.kind = ipc::EventKind::kProgress;
  ev.run = in.run->id;
  ev.index = in.index;
  ev.checkpoint = checkpoint_of(root_of(in));  // a branch's is in its instance's
  emit_(std::move(ev));
}

void Engine::finish(Instance& in, ipc::Outcome outcome, const std::string& reason,
                    const HttpResponse* resp) {
  if (in.run->sink != nullptr) {
    end_instance(in, outcome, reason);
    return;
  }
  ipc::Event ev = step_event(in, outcome, resp);
  ev.reason = secrets_.redact(reason);
  if (in.branch) {
    branch_done(in, outcome, reason, std::move(ev));
    return;
  }
  emit_(std::move(ev));
  end_instance(in, outcome, reason);
}

void Engine::end_instance(Instance& in, ipc::Outcome outcome, const std::string& reason) {
  if (IterationSink* sink = in.run->sink) {
    uint32_t vu = in.index;
    std::string why = reason.empty() ? std::string() : secrets_.redact(reason);
    const TraceId trace = trace_of(in);
    release(in);
    in.run->active -= 1;
    timeouts_.erase(in.serial);
    instances_.erase(in.serial);  // first: the sink may start the VU's next iteration
    sink->on_iteration_end(vu, outcome, why, trace);
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
  release(in);
  in.run->active -= 1;
  timeouts_.erase(in.serial);
  rows_.erase(in.serial);
  instances_.erase(in.serial);  // `in` is gone after this line
}

}  // namespace corral::worker
