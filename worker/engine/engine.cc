// The engine's instances: starting them, running their steps, and their timers. What happens
// with a response is in engine_response.cc.
#include "worker/engine/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "config/config.h"
#include "config/scenario/parse.h"
#include "shared/ipc/vars.h"
#include "shared/proc.h"
#include "shared/uv/handle.h"
#include "shared/uv/pulse.h"
#include "worker/engine/instance.h"
#include "worker/engine/jitter.h"
#include "worker/engine/step_runner.h"
#include "worker/otlp/span_exporter.h"

namespace corral::worker {

Engine::Engine(uv_loop_t* loop, HttpClient& http, Emit emit, const Secrets& secrets)
    : loop_(loop),
      http_(http),
      emit_(std::move(emit)),
      secrets_(secrets),
      wakes_(loop, [this](uint64_t serial, uint64_t token) { on_wake(serial, token); }),
      gates_(loop,
             [this](uint64_t serial, std::shared_ptr<Gates::Pass> pass) {
               auto it = instances_.find(serial);  // (gone: the request is not built)
               dispatch(serial, std::move(pass),
                        it == instances_.end() ? nullptr : span_for(*it->second));
             }),
      trace_salt_((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()) {}

Engine::~Engine() = default;

template <typename Fn>
void Engine::guarded(uint64_t serial, const char* where, Fn&& fn) noexcept {
  uv::pulse();  // a busy loop still beats (shared/uv/pulse.h)
  try {
    fn();
  } catch (const std::exception& e) {
    fail_internal(serial, where, e.what());
  } catch (...) {
    fail_internal(serial, where, "an exception that is not a std::exception");
  }
}

void Engine::fail_internal(uint64_t serial, const char* where, const std::string& what) noexcept {
  try {
    auto it = instances_.find(serial);
    if (it == instances_.end()) {
      spdlog::error("engine: {} threw after its instance ended: {}", where, secrets_.redact(what));
      return;
    }
    Instance& in = *it->second;
    spdlog::error("run {} instance {} step {}: {} threw: {}", in.run->id, in.index, in.cp.step,
                  where, secrets_.redact(what));
    finish(in, ipc::Outcome::kErrored, std::string("internal error in ") + where + ": " + what);
  } catch (...) {
    // Even reporting failed (out of memory, or emit itself throws): drop the instance without
    // an event rather than let anything unwind into libuv. The master sees it when the run
    // is cancelled or the worker replaced.
    if (auto it = instances_.find(serial); it != instances_.end()) drop(it);
  }
}

Status Engine::define_run(const std::string& run, const nlohmann::json& doc,
                          const nlohmann::json& vars, RunShape shape) {
  std::set<std::string> extra;
  if (vars.is_object()) {
    for (const auto& [k, v] : vars.items()) extra.insert(k);
  }
  std::unique_ptr<data::RowFile> rows;
  if (shape.data.is_object()) {
    auto opened = data::RowFile::open(shape.data);
    if (!opened) return opened.status();
    rows = std::move(*opened);
    for (const auto& c : shape.data["columns"]) extra.insert("row." + c.get<std::string>());
  }
  auto parsed = scenario::parse_scenario(doc, extra);
  if (!parsed) return parsed.status();
  auto r = std::make_unique<Run>();
  r->rows = std::move(rows);
  r->id = run;
  r->jitter_seed = jitter_seed(run);
  r->scenario = *parsed;
  r->shape = shape;
  if (shape.size != 0) r->start_spread_ms = scenario::start_spread_ms(**parsed, shape.size);
  for (const scenario::Step& step : r->scenario->steps) {
    const StepRunner* runner = find_step_runner(step.kind->name);
    if (runner == nullptr) {
      return invalid_argument("steps[" + std::to_string(step.index) + "]: a \"" +
                              std::string(step.kind->name) + "\" step cannot run on this worker");
    }
    r->runners.push_back(runner);
  }
  index_callbacks(*r);
  resolve_http(*r);
  r->vars = (*parsed)->vars;
  if (vars.is_object()) r->vars.update(vars);
  runs_[run] = std::move(r);
  return Status::ok();
}

Status Engine::define_load_run(const std::string& run, const nlohmann::json& doc,
                               const nlohmann::json& vars, IterationSink* sink, uint64_t think_ms) {
  if (Status s = define_run(run, doc, vars); !s) return s;
  const scenario::Scenario& parsed = *runs_[run]->scenario;
  if (parsed.steps.size() != parsed.top_steps()) {
    runs_.erase(run);
    return invalid_argument("a load run cannot run a step with branches (parallel)");
  }
  if (!parsed.limits.empty()) {
    runs_.erase(run);
    return invalid_argument("limits: a load test measures its target unthrottled; per-target "
                            "limits are for scenario runs");
  }
  runs_[run]->sink = sink;
  runs_[run]->think_ms = think_ms;
  return Status::ok();
}

size_t Engine::active(const std::string& run) const {
  auto it = runs_.find(run);
  return it == runs_.end() ? 0 : it->second->active;
}

Status Engine::start(const std::string& run, uint32_t index, const ipc::Checkpoint& cp) {
  auto it = runs_.find(run);
  if (it == runs_.end()) return invalid_argument("unknown run \"" + run + "\"");
  if (cp.step >= it->second->scenario->top_steps()) {
    return invalid_argument("instance " + std::to_string(index) + " checkpoint step " +
                            std::to_string(cp.step) + " is past the last step");
  }
  auto vars = ipc::vars_from_wire(cp.vars, secrets_);
  if (!vars) return vars.status();
  auto in = std::make_unique<Instance>();
  in->engine = this;
  in->run = it->second.get();
  in->serial = next_serial_++;
  in->index = index;
  in->cp = cp;
  in->cp.vars = std::move(*vars);
  rewind(*it->second->scenario, in->cp);
  it->second->runners[in->cp.step]->resumed(*in);
  Instance& ref = *in;
  if (!ref.run->next_callback.empty()) ref.run->serials[index] = ref.serial;
  instances_[in->serial] = std::move(in);
  ref.run->active += 1;
  uint64_t serial = ref.serial;
  ipc::InHandScope scope(in_hand_, ref.run->id, ref.index);
  guarded(serial, "start", [&] {
    if (ref.run->rows) {
      auto row = ref.run->rows->row(index);  // read again on every start: it never travels
      if (!row) {
        finish(ref, ipc::Outcome::kErrored, row.status().message());
        return;
      }
      rows_[serial] = std::move(*row);
    }
    resume_or_run(ref);
  });
  return Status::ok();
}

// An instance that moved while its step waited (for its next request, or to the end of a
// sleep) waits out the rest here (never past the step's deadline); any other runs its step now.
void Engine::resume_or_run(Instance& in) {
  const Run& run = *in.run;
  if (run.start_spread_ms != 0 && in.cp.step == 0 && in.cp.step_started_ms == 0) {
    // A fresh instance's place in its run's start spread (the same on any worker).
    int64_t at = run.shape.created_ms +
                 static_cast<int64_t>(run.start_spread_ms * in.index / run.shape.size);
    if (at > unix_ms_now()) {
      in.next = Instance::Next::kRunStep;
      wait_until(in, at);
      return;
    }
  }
  int64_t wake = in.cp.wake_ms;
  in.cp.wake_ms = 0;
  if (wake <= unix_ms_now() || in.cp.step_started_ms == 0) {
    run_step(in);
    return;
  }
  if (in.cp.deadline_ms != 0) wake = std::min(wake, in.cp.deadline_ms);
  wake_step_at(in, wake);
}

void Engine::run_step(Instance& in) {
  if (poison_ && in.index == *poison_) std::abort();
  if (!leased(in, Held::kRunStep)) return;
  if (in.cp.step_started_ms == 0) {
    int64_t now = unix_ms_now();
    if (in.cp.started_ms == 0) in.cp.started_ms = now;  // its first step
    in.cp.step_started_ms = now;
    in.cp.attempts = 0;
    in.cp.tries = 0;
    in.step_tls_ms = 0;
    uint64_t limit = in.step().limit_ms;
    in.cp.deadline_ms = limit != 0 ? now + static_cast<int64_t>(limit) : 0;
  }
  in.runner().run(*this, in);
}

bool Engine::ended_past_deadline(Instance& in) {
  if (in.cp.deadline_ms == 0 || unix_ms_now() < in.cp.deadline_ms) return false;
  finish(in, ipc::Outcome::kFailed, timed_out_reason(in, -1));
  return true;
}

void Engine::wake_step_at(Instance& in, int64_t at_ms) {
  in.next = Instance::Next::kStep;
  wait_until(in, at_ms);
}

void Engine::wait_until(Instance& in, int64_t at_ms) {
  // The queue counts from the loop's clock (monotonic, coarse, in whole ms), which can run up to
  // a couple of ms ahead of the wall clock's ms: one more ms makes an early wake-up rare, and
  // on_wake puts back one that still comes early.
  int64_t delay = std::max<int64_t>(0, at_ms - unix_ms_now() + 1);
  in.wake_ms = at_ms;
  in.wake_token = wakes_.schedule(in.serial, static_cast<uint64_t>(delay));
}

// A wake-up from the queue; one for an instance that has ended, or that was rescheduled since,
// is ignored.
void Engine::on_wake(uint64_t serial, uint64_t token) {
  auto it = instances_.find(serial);
  if (it == instances_.end() || it->second->wake_token != token) return;
  Instance& in = *it->second;
  in.wake_token = 0;
  if (in.wake_ms > unix_ms_now()) {  // never before its time on the wall clock
    wait_until(in, in.wake_ms);
    return;
  }
  ipc::InHandScope scope(in_hand_, in.run->id, in.index);
  guarded(serial, "a timer", [&] { on_timer(in); });
}

void Engine::on_timer(Instance& in) {
  switch (in.next) {
    case Instance::Next::kStep:
      in.runner().on_wake(*this, in);
      return;
    case Instance::Next::kRunStep:  // think time over, or its place in the start spread
      run_step(in);
      return;
    case Instance::Next::kTimedOut: {
      if (unix_ms_now() < in.cp.deadline_ms) {
        wait_until(in, in.cp.deadline_ms);
        return;
      }
      in.runner().timed_out(*this, in);
      auto it = timeouts_.find(in.serial);
      if (it == timeouts_.end()) {
        finish(in, ipc::Outcome::kFailed, timed_out_reason(in, -1));
        return;
      }
      Timeout t = std::move(it->second);
      HttpResponse last;  // what the record shows of it: the excerpt is already made
      last.status = t.status;
      last.body = std::move(t.body);
      finish(in, ipc::Outcome::kFailed, t.reason, &last);
      return;
    }
  }
}

void Engine::time_out_at(Instance& in, int64_t at_ms, std::string reason,
                         const HttpResponse* last) {
  Timeout& t = timeouts_[in.serial];
  t.reason = std::move(reason);
  if (last != nullptr && in.run->sink == nullptr) {
    t.status = last->status;
    t.body = secrets_.excerpt(last->body, ipc::kBodyExcerptBytes);
  }
  in.next = Instance::Next::kTimedOut;
  wait_until(in, at_ms);
}

std::string Engine::timed_out_reason(const Instance& in, int64_t in_flight_ms) const {
  std::string reason = std::string(in.runner().limit_word()) + " timed out after " +
                       config::format_duration_ms(in.step().limit_ms);
  if (in_flight_ms >= 0) {
    reason += " (last request in flight " +
              config::format_duration_ms(static_cast<uint64_t>(in_flight_ms)) + ")";
  }
  return reason;
}

// The request for the instance's current try, its timeout cut to the time left before the
// step's deadline. nullopt when the instance ended instead (a template that cannot expand,
// or no time left).
std::optional<HttpRequest> Engine::make_request(Instance& in) {
  auto req = build_request(in);
  if (!req) {
    finish(in, ipc::Outcome::kErrored, "request: " + req.status().message());
    return std::nullopt;
  }
  int64_t now = unix_ms_now();
  if (in.cp.deadline_ms != 0) {
    int64_t left = in.cp.deadline_ms - now;
    if (left <= 0) {
      finish(in, ipc::Outcome::kFailed, timed_out_reason(in, -1));
      return std::nullopt;
    }
    req->timeout_ms = std::min<uint64_t>(req->timeout_ms, static_cast<uint64_t>(left));
  }
  in.sent_ms = now;
  in.requesting = true;
  req->tag = in.serial;
  ++requests_sent_;
  if (in.run->sink != nullptr) in.run->sink->on_request(in.index, *req);
  return std::move(*req);
}

bool Engine::retry_later(Instance& in, const std::string& why) {
  const auto& retry = in.run->scenario->steps[in.cp.step].retry;
  if (static_cast<int>(in.cp.tries) >= retry.attempts) return false;
  double grown = static_cast<double>(retry.initial_interval_ms) *
                 std::pow(retry.backoff_factor, static_cast<double>(in.cp.tries - 1));
  // (Retries draw their jitter apart from a poll's attempts in the same step: the top bit.)
  auto delay = static_cast<int64_t>(jittered_ms(
      static_cast<uint64_t>(std::min(grown, static_cast<double>(retry.max_interval_ms))),
      retry.jitter, in.run->jitter_seed, in.index, in.cp.step, in.cp.tries | 0x80000000u));
  spdlog::debug("run {} instance {} step {}: retrying in {} ms: {}", in.run->id, in.index,
                in.cp.step, delay, secrets_.redact(why));
  int64_t at = unix_ms_now() + delay;
  report_progress(in);  // a retry is a counted event: it must survive a crash
  if (in.cp.deadline_ms != 0 && at >= in.cp.deadline_ms) {
    time_out_at(in, in.cp.deadline_ms, timed_out_reason(in, -1) + ": " + why);
    return true;
  }
  wake_step_at(in, at);
  return true;
}

StepRunner::State* Engine::state_of(const StepRunner& runner) {
  auto it = states_.find(&runner);
  if (it == states_.end()) it = states_.emplace(&runner, runner.make_state(*this)).first;
  return it->second.get();
}

void Engine::measure_step(const Instance& in, ExchangeClass cls, uint64_t bytes,
                          int64_t elapsed_ns) {
  if (in.run->sink != nullptr)
    in.run->sink->on_measure(in.index, in.cp.step, cls, bytes, elapsed_ns, trace_of(in));
}

void Engine::release_held(uint64_t key) {
  for (auto& [runner, state] : states_) {
    if (state) state->holder_gone(key);
  }
}

SocketCounts Engine::socket_counts(uint32_t group, bool forget) {
  SocketCounts out;
  for (auto& [runner, state] : states_) {
    if (state) state->count_sockets(group, forget, out);
  }
  return out;
}

void Engine::with_instance(uint64_t serial, const char* where,
                           const std::function<void(Instance&)>& fn) {
  auto it = instances_.find(serial);
  if (it == instances_.end()) return;
  Instance& in = *it->second;
  ipc::InHandScope scope(in_hand_, in.run->id, in.index);
  guarded(serial, where, [&] { fn(in); });
}

void Engine::cancel_run(const std::string& run) {
  auto r = runs_.find(run);
  if (r == runs_.end()) return;
  // (Releasing an instance in a parallel step drops its branches: not while iterating.)
  std::vector<uint64_t> serials;
  for (const auto& [serial, in] : instances_) {
    if (in->run == r->second.get() && !in->branch) serials.push_back(serial);
  }
  for (uint64_t serial : serials) {
    release(*instances_.at(serial));
    timeouts_.erase(serial);
    rows_.erase(serial);
    instances_.erase(serial);
    uv::pulse();  // a run of thousands: a loop this busy still beats
  }
  runs_.erase(r);
}

}  // namespace corral::worker
