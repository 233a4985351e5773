#include "worker/load/driver.h"

#include <algorithm>
#include <cmath>

#include "shared/uv/pulse.h"

namespace corral::worker {
namespace {

// How often the VU count follows the target (closed) and the end is looked for. An open
// model's arrivals start on the wake-up queue's exact clock.
constexpr uint64_t kTickMs = 10;
// The wake-up queue's id for the open model's next arrival (VUs are numbered below it).
constexpr uint64_t kArrivals = UINT64_MAX;
constexpr size_t kMaxReasons = 10;      // distinct failure reasons kept per second
constexpr size_t kMaxArrivalsPerTick = 100000;

uint64_t now_us() { return uv_hrtime() / 1000; }

// Part `index` of `total` split `of` ways: item k goes to part k mod of.
uint64_t split(uint64_t total, uint32_t index, uint32_t of) {
  return total / of + (index < total % of ? 1 : 0);
}

}  // namespace

uint64_t LoadShare::part(uint64_t total) const {
  return split(split(total, host, hosts), index, of);
}

LoadDriver::LoadDriver(uv_loop_t* loop, Engine& engine, std::string id, load::LoadSpec spec,
                       LoadShare share, Report report)
    : engine_(engine),
      id_(std::move(id)),
      spec_(std::move(spec)),
      share_(share),
      report_(std::move(report)),
      scheduled_(spec_.model == load::Model::kOpen || spec_.pace_ms != 0),
      held_(spec_.model == load::Model::kHeld),
      wakes_(loop,
             [this](uint64_t wake, uint64_t token) {
               if (wake == kArrivals) {
                 on_arrivals_due(token);
               } else {
                 on_wake(static_cast<uint32_t>(wake), token);
               }
             }),
      start_timer_(loop),
      tick_(loop),
      second_timer_(loop),
      grace_timer_(loop),
      finish_timer_(loop),
      drain_turn_(loop) {
  second_.load = id_;
  if (share_.of == 0) share_.of = 1;
  if (share_.hosts == 0) share_.hosts = 1;
  start_held();
}

LoadDriver::~LoadDriver() {
  if (phase_ != Phase::kFinished) engine_.cancel_run(id_);
}

Status LoadDriver::start(const nlohmann::json& scenario, const nlohmann::json& vars,
                         uint64_t delay_ms) {
  if (Status s = wakes_.use_exact_clock(); !s) return s;
  if (Status s = second_timer_.open([this] { on_second(); }); !s) return s;
  if (Status s = engine_.define_load_run(id_, scenario, vars, this, spec_.think_ms); !s) return s;
  start_timer_.start(delay_ms, 0, [this] { begin(); });
  return Status::ok();
}

void LoadDriver::begin() {
  phase_ = Phase::kRunning;
  t0_us_ = now_us();
  const bool open = spec_.model == load::Model::kOpen;
  if (open) {
    max_vus_ = std::max<uint64_t>(1, share_.part(spec_.max_vus));
    // Workers take turns: the first arrival of the worker whose VUs are numbered from p is
    // p test-wide arrival intervals after the start.
    double rate = spec_.target_at(0);
    next_arrival_us_ = static_cast<double>(t0_us_) +
                       (rate > 0 ? 1e6 * static_cast<double>(share_.test_vu(0)) / rate : 0.0);
  }
  arm_second();
  tick_.start(0, kTickMs, [this] { on_tick(); });
}

uint64_t LoadDriver::elapsed_ms(uint64_t now) const {
  return now > t0_us_ ? (now - t0_us_) / 1000 : 0;
}

void LoadDriver::on_tick() {
  if (phase_ != Phase::kRunning) return;
  uint64_t now = now_us();
  uint64_t t = elapsed_ms(now);
  if (t >= spec_.duration_ms()) {
    // Arrivals intended before the end that this tick is the first to see still start.
    if (spec_.model == load::Model::kOpen) run_arrivals(now);
    drain();
    return;
  }
  switch (spec_.model) {
    case load::Model::kClosed:
    case load::Model::kHeld:
      set_vus(share_.part(static_cast<uint64_t>(std::floor(spec_.target_at(t) + 1e-9))),
              now);
      return;
    case load::Model::kOpen:
      run_arrivals(now);
      return;
  }
}

// Closed model: starts or retires VUs to have `want`. New VUs with a pace spread their first
// iterations over one pace, so that VUs added together do not send together forever.
void LoadDriver::set_vus(uint64_t want, uint64_t now) {
  if (live_ < want) {
    const uint64_t add = want - live_;
    const uint64_t pace_us = spec_.pace_ms * 1000;
    for (uint64_t k = 0; k < add; ++k) {
      uint32_t vu = add_vu();
      uint64_t at = now + pace_us * k / add;
      if (at <= now) {
        begin_iteration(vu, now, now);
      } else {
        schedule(vu, at);
      }
    }
    return;
  }
  for (size_t i = vus_.size(); i-- > 0 && live_ > want;) {
    Vu& v = vus_[i];
    if (v.state == VuState::kRetired || v.retiring) continue;
    if (v.state == VuState::kRunning) {
      v.retiring = true;  // it ends after this iteration
      --live_;
    } else {
      retire(static_cast<uint32_t>(i));
    }
  }
}

uint32_t LoadDriver::add_vu() {
  uint32_t vu;
  if (!retired_.empty()) {
    vu = retired_.back();
    retired_.pop_back();
    vus_[vu] = Vu{};
  } else {
    vu = static_cast<uint32_t>(vus_.size());
    vus_.emplace_back();
  }
  ++live_;
  second_.vus = std::max(second_.vus, live_);
  return vu;
}

void LoadDriver::retire(uint32_t vu) {
  Vu& v = vus_[vu];
  if (v.state == VuState::kRetired) return;
  if (!v.retiring) --live_;
  release_connection(vu);
  v = Vu{};
  v.state = VuState::kRetired;
  retired_.push_back(vu);
}

void LoadDriver::on_arrivals_due(uint64_t token) {
  if (token != arrivals_token_ || phase_ != Phase::kRunning) return;
  arrivals_token_ = 0;
  run_arrivals(now_us() + WakeQueue::kEarlyUs);  // the queue wakes up to kEarlyUs early
}

// Open model: every arrival due by `now` starts on an idle VU, or a new one up to max_vus, or
// is dropped; the queue wakes the driver for the next one.
void LoadDriver::run_arrivals(uint64_t now) {
  run_due_arrivals(now);
  auto next = static_cast<uint64_t>(std::llround(next_arrival_us_));
  if (phase_ != Phase::kRunning || elapsed_ms(next) >= spec_.duration_ms())
    return;  // the tick ends it
  if (arrivals_token_ == 0 || next != arrivals_at_) {
    arrivals_at_ = next;
    arrivals_token_ = wakes_.schedule_at(kArrivals, next);
  }
}

void LoadDriver::run_due_arrivals(uint64_t now) {
  for (size_t n = 0; n < kMaxArrivalsPerTick && next_arrival_us_ <= static_cast<double>(now);
       ++n) {
    // Rounded to the microsecond: the sum of intervals must not slip an arrival in before
    // the end (or a stage's boundary) by a rounding error.
    auto at = static_cast<uint64_t>(std::llround(next_arrival_us_));
    uint64_t t = elapsed_ms(at);
    if (t >= spec_.duration_ms()) return;
    double rate = spec_.target_at(t) * share_.fraction();
    if (rate <= 0) {
      next_arrival_us_ += 1000;  // nothing arrives while the rate is 0: look again in 1 ms
      continue;
    }
    next_arrival_us_ += 1e6 / rate;
    uint32_t vu;
    if (!idle_.empty()) {
      vu = idle_.back();
      idle_.pop_back();
    } else if (vus_.size() - retired_.size() < max_vus_) {
      vu = add_vu();
    } else {
      ++second_.dropped;
      continue;
    }
    begin_iteration(vu, at, at);  // an idle VU: ready long since
  }
}

// `ready_us`: when the VU was free to start it (its previous iteration's end). The iteration's
// lateness (from its intended start) is added to its requests' latency; the part of it after
// both its intended start and `ready_us` is corral's own (start_lateness): the time its loop
// took to come to it.
void LoadDriver::begin_iteration(uint32_t vu, uint64_t intended_us, uint64_t ready_us) {
  Vu& v = vus_[vu];
  if (elapsed_ms(intended_us) >= spec_.duration_ms()) {  // due at or after the end: the end
    v.state = VuState::kIdle;
    retire(vu);
    drain();
    return;
  }
  v.state = VuState::kRunning;
  v.intended_us = intended_us;
  v.started_us = std::max(now_us(), intended_us);
  const uint64_t could_start = std::max(intended_us, ready_us);
  if (scheduled_) second_.late.record(v.started_us > could_start ? v.started_us - could_start : 0);
  starting_ = true;
  Status s = engine_.start(id_, vu, ipc::Checkpoint{});
  starting_ = false;
  if (!s) on_iteration_end(vu, ipc::Outcome::kErrored, "cannot start: " + s.message(), {});
}

// The VU waits for its next iteration, intended at `at_us` (at once if that has passed).
void LoadDriver::schedule(uint32_t vu, uint64_t at_us) {
  Vu& v = vus_[vu];
  v.state = VuState::kWaiting;
  v.intended_us = at_us;
  v.ready_us = now_us();
  v.token = wakes_.schedule_at(vu, at_us);
}

void LoadDriver::on_wake(uint32_t vu, uint64_t token) {
  if (vu >= vus_.size()) return;
  Vu& v = vus_[vu];
  if (v.token != token || v.state != VuState::kWaiting || phase_ != Phase::kRunning) return;
  v.token = 0;
  begin_iteration(vu, v.intended_us, v.ready_us);
}

void LoadDriver::on_exchange(uint32_t vu, size_t step, const HttpResponse& resp, ExchangeClass cls,
                             uint64_t elapsed_ns, TraceId trace) {
  if (resp.tls_ms > 0) {
    ++second_.handshakes;
    second_.resumed += resp.tls_resumed ? 1 : 0;
    second_.handshake.record(static_cast<uint64_t>(resp.tls_ms * 1000));
  }
  if (std::string_view(resp.protocol) == "HTTP/2") ++second_.http2;
  if (std::string_view(resp.protocol) == "HTTP/1.1") ++second_.http1;
  record(vu, step, cls, resp.body.size(), static_cast<int64_t>(elapsed_ns), resp.status, trace);
}

void LoadDriver::on_measure(uint32_t vu, size_t step, ExchangeClass cls, uint64_t bytes,
                            int64_t elapsed_ns, TraceId trace) {
  record(vu, step, cls, bytes, elapsed_ns, 0, trace);
}

namespace {

const char* slow_outcome(ExchangeClass cls) {
  switch (cls) {
    case ExchangeClass::kStatus:
      return "status";
    case ExchangeClass::kTransport:
      return "transport";
    case ExchangeClass::kTimeout:
      return "timeout";
    default:
      return "ok";
  }
}

}  // namespace

void LoadDriver::record(uint32_t vu, size_t step, ExchangeClass cls, uint64_t bytes,
                        int64_t elapsed_ns, int status, TraceId trace) {
  if (step >= steps_.size()) steps_.resize(step + 1);
  ipc::StepSecond& s = steps_[step];
  ++s.requests;
  s.bytes += bytes;
  switch (cls) {
    case ExchangeClass::kOk:
      break;
    case ExchangeClass::kStatus:
      ++s.status;
      break;
    case ExchangeClass::kTransport:
      ++s.transport;
      break;
    case ExchangeClass::kTimeout:
      ++s.timeout;
      break;
  }
  if (elapsed_ns < 0) return;
  uint64_t raw = static_cast<uint64_t>(elapsed_ns) / 1000;
  uint64_t late = 0;
  if (scheduled_ && vu < vus_.size()) late = vus_[vu].started_us - vus_[vu].intended_us;
  s.raw.record(raw);
  s.latency.record(raw + late);
  // Among the second's slowest: kept with its trace, for the test's slowest requests.
  auto& slowest = second_.slowest;
  if (slowest.size() < ipc::kSlowestPerSecond || raw + late > slowest.back().us) {
    const bool traced = trace.hi != 0 || trace.lo != 0;
    ipc::keep_slowest(slowest,
                      {raw + late, static_cast<uint32_t>(step), status, slow_outcome(cls), 0,
                       traced ? to_hex(trace) : std::string()},
                      ipc::kSlowestPerSecond);
  }
}

void LoadDriver::on_expect_failed(uint32_t, size_t step) {
  if (step >= steps_.size()) steps_.resize(step + 1);
  ++steps_[step].expect;
}

void LoadDriver::on_iteration_end(uint32_t vu, ipc::Outcome outcome, const std::string& reason,
                                  TraceId trace) {
  if (vu >= vus_.size()) return;
  ++(outcome == ipc::Outcome::kPassed ? second_.passed : second_.failed);
  if (!reason.empty() &&
      (second_.reasons.size() < kMaxReasons || second_.reasons.count(reason) != 0)) {
    ++second_.reasons[reason];
    // The first iteration that failed so in the second names its trace.
    if (trace.hi != 0 || trace.lo != 0) second_.reason_traces.emplace(reason, to_hex(trace));
  }
  Vu& v = vus_[vu];
  v.state = VuState::kIdle;
  if (phase_ != Phase::kRunning || v.retiring) {
    retire(vu);
    if (phase_ == Phase::kDraining && drain_next_ >= vus_.size() && engine_.active(id_) == 0) {
      finish_soon();
    }
    return;
  }
  if (spec_.model == load::Model::kOpen) {
    idle_.push_back(vu);
    return;
  }
  // Closed: the next iteration is due one pace after this one's intended start (at once
  // without a pace); a late one starts now and keeps the schedule.
  uint64_t now = now_us();
  uint64_t next = spec_.pace_ms != 0 ? v.intended_us + spec_.pace_ms * 1000 : now;
  if (next <= now && !starting_) {
    begin_iteration(vu, next, now);
  } else {
    schedule(vu, next);  // inside engine_.start(): through the loop
  }
}

void LoadDriver::stop() {
  if (phase_ == Phase::kWaiting) {
    start_timer_.stop();
    finish_soon();
    return;
  }
  drain();
}

// No iteration starts from now on; those running get the grace period.
void LoadDriver::drain() {
  if (phase_ != Phase::kRunning) return;
  phase_ = Phase::kDraining;
  tick_.stop();
  idle_.clear();
  grace_timer_.start(spec_.grace_ms, 0, [this] {
    second_.interrupted += engine_.active(id_);
    finish();
  });
  drain_next_ = 0;
  retire_some();
}

// Retires the VUs that wait for their next start, a slice of the loop's turn at a time: a held
// VU's socket closes as it retires (a close frame written), and a worker holding 18,000 of them
// would otherwise spend seconds in one callback, its heartbeat and its pipe to the master
// waiting, on a machine whose cores the target's teardown takes too.
void LoadDriver::retire_some() {
  const uv::Slice slice = uv::Slice::of_turn(engine_.loop());
  for (; drain_next_ < vus_.size() && !slice.over(); ++drain_next_) {
    const VuState state = vus_[drain_next_].state;
    if (state == VuState::kWaiting || state == VuState::kIdle) {
      retire(static_cast<uint32_t>(drain_next_));
    }
  }
  if (drain_next_ < vus_.size()) {
    drain_turn_.schedule([this] { retire_some(); });
  } else if (engine_.active(id_) == 0) {
    finish_soon();
  }
}

// Through the loop: the caller may be inside the engine, whose run finish() forgets.
void LoadDriver::finish_soon() {
  finish_timer_.start(0, 0, [this] { finish(); });
}

void LoadDriver::finish() {
  if (phase_ == Phase::kFinished) return;
  phase_ = Phase::kFinished;
  for (uv::Timer* t : {&start_timer_, &tick_, &grace_timer_, &finish_timer_}) t->stop();
  second_timer_.stop();
  drain_turn_.cancel();
  engine_.cancel_run(id_);  // iterations still running are dropped (counted as interrupted)
  release_connections();
  ipc::LoadSecond last = take_second();
  last.done = true;
  report_(std::move(last));  // last: the report may destroy this driver
}

// The timer is set for the next whole second from the test's start, each time, so that it
// does not drift from the test's clock over a long test. It is an exact timer: a libuv timer
// counts from the loop's clock, read once per turn, and after a turn that started thousands of
// iterations it fired before the second had ended, and the report took the next second's number.
void LoadDriver::arm_second() {
  second_timer_.start_at(t0_us_ + (elapsed_ms(now_us()) / 1000 + 1) * 1'000'000);
}

void LoadDriver::on_second() {
  arm_second();
  report_(take_second());
}

// A report is the second of the test that ended last, by the test's clock, so that every
// worker's second k is the same k seconds after the start. A loop held past whole seconds
// (starved of CPU) reports what it counted meanwhile under the last of them: the seconds it
// missed have nothing from this worker, and the totals are whole.
ipc::LoadSecond LoadDriver::take_second() {
  ipc::LoadSecond out = std::move(second_);
  second_ = ipc::LoadSecond{};
  second_.load = id_;
  second_.vus = live_;
  const uint64_t ended = std::max<uint64_t>(elapsed_ms(now_us()), 1000) / 1000 - 1;
  out.second = std::max(static_cast<uint32_t>(ended), second_index_);
  second_index_ = out.second + 1;
  for (ipc::SlowRequest& r : out.slowest) r.second = out.second;
  out.running = engine_.active(id_);
  count_connections(out);
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (steps_[i].requests == 0 && steps_[i].expect == 0) continue;
    out.steps.emplace(static_cast<uint32_t>(i), std::move(steps_[i]));
    steps_[i] = ipc::StepSecond{};
  }
  return out;
}

}  // namespace corral::worker
