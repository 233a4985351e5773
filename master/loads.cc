#include "master/loads.h"

#include "master/ids.h"

#include <algorithm>

#include "shared/proc.h"

namespace corral::master {
namespace {

using nlohmann::json;
using stats::Histogram;

double ms(uint64_t us) { return static_cast<double>(us) / 1000.0; }  // microseconds are exact

api::Latency latency_of(const Histogram& h) {
  return {h.count(),          ms(h.min()),          ms(static_cast<uint64_t>(h.mean())),
          ms(h.value_at(50)), ms(h.value_at(90)),   ms(h.value_at(95)),
          ms(h.value_at(99)), ms(h.value_at(99.9)), ms(h.max())};
}

api::LoadErrors errors_of(const ipc::StepSecond& s) {
  double rate = s.requests == 0 ? 0.0 : static_cast<double>(s.errors()) / s.requests;
  return {s.errors(), rate, s.status, s.transport, s.timeout, s.expect};
}

// Every step of `second` added into one.
ipc::StepSecond all_steps(const ipc::LoadSecond& second) {
  ipc::StepSecond all;
  for (const auto& [index, s] : second.steps) all.add(s);
  return all;
}

// The steps of the test that `th` measures, added into one: those named th.step (every step
// when it names none), of the WebSocket kinds for the ws_ metrics.
ipc::StepSecond measured_steps(const load::Threshold& th, const LoadTest& t) {
  ipc::StepSecond all;
  for (const auto& [index, s] : t.total.steps) {
    if (!th.step.empty() && (index >= t.step_names.size() || t.step_names[index] != th.step)) {
      continue;
    }
    const std::string_view kind =
        index < t.step_kinds.size() ? std::string_view(t.step_kinds[index]) : std::string_view();
    if (th.metric == load::Metric::kWsLatency && kind != "ws_receive") continue;
    if (th.metric == load::Metric::kWsErrors && kind.substr(0, 2) != "ws") continue;
    all.add(s);
  }
  return all;
}

json second_json(uint32_t t, const ipc::LoadSecond& s) {
  ipc::StepSecond all = all_steps(s);
  return {{"t", t},
          {"vus", s.vus},
          {"running", s.running},
          {"rps", all.requests},
          {"iterations", s.passed + s.failed},
          {"failed", s.failed},
          {"dropped", s.dropped},
          {"connections", s.connections},
          {"connect_failed", s.connect_failed},
          {"sent", s.messages_sent},
          {"received", s.messages_received},
          {"errors", all.errors()},
          {"bytes", all.bytes},
          {"p50", ms(all.latency.value_at(50))},
          {"p90", ms(all.latency.value_at(90))},
          {"p99", ms(all.latency.value_at(99))},
          {"max", ms(all.latency.max())},
          {"raw_p99", ms(all.raw.value_at(99))}};
}

// The watched target: what it is, its last sample and peaks, what it did, and (with the
// series) every sample.
api::LoadTarget target_of(const LoadTest& t, bool with_series) {
  const load::Watch& w = t.spec.watch;
  api::LoadTarget out;
  for (const json& s : t.target) {
    if (s.contains("rss")) out.rss_max = std::max(out.rss_max, s["rss"].get<double>());
    if (s.contains("cpu")) out.cpu_max = std::max(out.cpu_max, s["cpu"].get<double>());
  }
  if (w.pid != 0) out.pid = w.pid;
  if (!w.url.empty()) out.url = w.url;
  out.last = t.target.empty() ? json(nullptr) : t.target.back();
  out.event = t.target_event;
  if (with_series) out.series = t.target;
  out.process = t.process;
  return out;
}

// A test spread over hosts: this host's share and, on the origin, the other hosts' shares.
api::LoadCluster cluster_of(const LoadTest& t) {
  api::LoadCluster out{t.host_count, t.host_index, std::nullopt, {}};
  if (!t.origin.empty()) out.origin = t.origin;
  for (const auto& [slot, r] : t.remote) {
    out.others.push_back({r.host, static_cast<int64_t>(Loads::share_of_slot(slot)),
                          r.state.empty() ? "starting" : r.state, t.slots.count(slot) != 0});
  }
  return out;
}

}  // namespace

double Loads::elapsed_s(const LoadTest& t, int64_t now_ms) {
  int64_t end = t.stopping_ms != 0 ? t.stopping_ms : t.ended_ms != 0 ? t.ended_ms : now_ms;
  end = std::min(end, t.started_ms + static_cast<int64_t>(t.spec.duration_ms()));
  return std::max(0.001, static_cast<double>(end - t.started_ms) / 1000.0);
}

std::string_view to_string(LoadState s) {
  switch (s) {
    case LoadState::kRunning:
      return "running";
    case LoadState::kPassed:
      return "passed";
    case LoadState::kFailed:
      return "failed";
    case LoadState::kStopped:
      return "stopped";
    case LoadState::kAborted:
      return "aborted";
  }
  return "?";
}

double threshold_value(const load::Threshold& th, const LoadTest& t, double elapsed) {
  const ipc::LoadSecond& total = t.total;
  const ipc::StepSecond steps = measured_steps(th, t);
  switch (th.metric) {
    case load::Metric::kLatency:
    case load::Metric::kLatencyRaw:
    case load::Metric::kWsLatency: {
      const Histogram& h = th.metric == load::Metric::kLatencyRaw ? steps.raw : steps.latency;
      switch (th.aggregate) {
        case load::Aggregate::kPercentile:
          return static_cast<double>(h.value_at(th.percentile));
        case load::Aggregate::kMin:
          return static_cast<double>(h.min());
        case load::Aggregate::kMax:
          return static_cast<double>(h.max());
        default:
          return h.mean();
      }
    }
    case load::Metric::kErrors:
    case load::Metric::kWsErrors:
      if (th.aggregate == load::Aggregate::kCount) return static_cast<double>(steps.errors());
      return steps.requests == 0 ? 0.0 : static_cast<double>(steps.errors()) / steps.requests;
    case load::Metric::kDropped: {
      if (th.aggregate == load::Aggregate::kCount) return static_cast<double>(total.dropped);
      uint64_t asked = total.passed + total.failed + total.interrupted + total.dropped;
      return asked == 0 ? 0.0 : static_cast<double>(total.dropped) / asked;
    }
    case load::Metric::kRps:
      return static_cast<double>(steps.requests) / std::max(elapsed, 1e-9);
    case load::Metric::kIterations:
      return static_cast<double>(total.passed + total.failed);
  }
  return 0;
}

std::string Loads::next_id() {
  seq_ += 1;
  if (keep_seq_) keep_seq_(seq_ + 1);
  return numbered_id('l', seq_);
}

LoadTest& Loads::add(std::string id, json scenario, json vars, json load, load::LoadSpec spec,
                     std::set<int> slots, int64_t now_ms, int64_t start_ms) {
  auto t = std::make_unique<LoadTest>();
  t->id = id;
  t->name = scenario.value("name", "");
  if (auto steps = scenario.find("steps"); steps != scenario.end() && steps->is_array()) {
    for (const auto& s : *steps) t->step_names.push_back(s.value("name", ""));
  }
  t->scenario = std::move(scenario);
  t->vars = std::move(vars);
  t->load = std::move(load);
  t->spec = std::move(spec);
  t->slots = std::move(slots);
  t->workers = t->slots.size();
  t->created_ms = now_ms;
  t->started_ms = start_ms;
  t->total.load = id;
  LoadTest& ref = *t;
  tests_[id] = std::move(t);
  order_.push_back(std::move(id));
  return ref;
}

LoadTest* Loads::find(const std::string& id) {
  auto it = tests_.find(id);
  return it == tests_.end() ? nullptr : it->second.get();
}

const LoadTest* Loads::find(const std::string& id) const {
  auto it = tests_.find(id);
  return it == tests_.end() ? nullptr : it->second.get();
}

std::vector<const LoadTest*> Loads::list() const {
  std::vector<const LoadTest*> out;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) out.push_back(find(*it));
  return out;
}

void Loads::remove(const std::string& id) {
  if (tests_.erase(id) == 0) return;
  order_.erase(std::find(order_.begin(), order_.end(), id));
}

Status Loads::on_second(int slot, ipc::LoadSecond&& s, int64_t now_ms) {
  LoadTest* t = find(s.load);
  if (t == nullptr) return protocol_error("load_stats: no load test \"" + s.load + "\"");
  if (t->slots.count(slot) == 0) return Status::ok();  // dropped from the test already
  const uint32_t second = s.second;
  const bool done = s.done;
  // The origin of a test over hosts forwards its own workers' seconds as a share does.
  const bool own = t->origin.empty() && t->host_count > 1 && slot >= 0;
  if (second < t->seconds) {
    t->total.add(s);  // a second already summed up: it still counts in the totals
    if ((!t->origin.empty() || own) && forward_) {
      s.done = false;  // the share's end is sent once its last second is complete
      forward_(*t, s);
    }
  } else {
    t->pending[second].add(s);
    if (own) t->local[second].add(s);
  }
  t->last_second[slot] = second;
  if (done) {
    t->slots.erase(slot);
    t->last_second.erase(slot);
  }
  complete_seconds(*t);
  finish_if_done(*t, now_ms);
  return Status::ok();
}

void Loads::worker_gone(int slot, int64_t now_ms) {
  for (auto& [id, t] : tests_) {
    drop(*t, slot, "worker " + std::to_string(slot) + " left during the test", now_ms);
  }
}

void Loads::drop(LoadTest& t, int slot, const std::string& why, int64_t now_ms) {
  if (t.ended() || t.slots.erase(slot) == 0) return;
  t.last_second.erase(slot);
  if (auto r = t.remote.find(slot);
      r != t.remote.end() && (r->second.state.empty() || r->second.state == "running")) {
    r->second.state = "left";  // another host's share, which sends no more
  }
  if (!why.empty()) t.reason += (t.reason.empty() ? "" : "; ") + why;
  complete_seconds(t);
  finish_if_done(t, now_ms);
}

namespace {

// Whether every slot still taking part in `t` (with `own_only`, every worker of this host) has
// reported `second`, or a later one.
bool reported(const LoadTest& t, uint32_t second, bool own_only) {
  return std::all_of(t.slots.begin(), t.slots.end(), [&](int slot) {
    auto it = t.last_second.find(slot);
    return (own_only && slot < 0) || (it != t.last_second.end() && it->second >= second);
  });
}

}  // namespace

// The origin's own workers' seconds that each of them has reported go to the database at once,
// not when the other hosts' parts have come too: what its death loses is the second in progress.
void Loads::forward_own(LoadTest& t) {
  while (!t.local.empty()) {
    auto first = t.local.begin();
    if (!reported(t, first->first, true)) return;
    first->second.second = first->first;
    first->second.done = false;
    if (forward_) forward_(t, first->second);
    t.local.erase(first);
  }
}

// Seconds every remaining worker has reported go into the totals and the series.
void Loads::complete_seconds(LoadTest& t) {
  forward_own(t);
  while (!t.pending.empty()) {
    auto first = t.pending.begin();
    if (!reported(t, first->first, false)) return;
    t.total.add(first->second);
    t.series.push_back(second_json(first->first, first->second));
    if (!t.origin.empty() && forward_) {
      first->second.second = first->first;
      forward_(t, first->second);
    }
    t.seconds = first->first + 1;
    t.pending.erase(first);
    if (t.origin.empty()) note_crossings(t);
  }
}

void Loads::finish_if_done(LoadTest& t, int64_t now_ms) {
  if (t.ended() || !t.slots.empty()) return;
  complete_seconds(t);
  t.ended_ms = now_ms;
  if (!t.origin.empty() && forward_) {
    // The share's end: a second the origin has (or has had) already, with nothing in it.
    ipc::LoadSecond last;
    last.load = t.id;
    last.second = t.seconds > 0 ? t.seconds - 1 : 0;
    last.done = true;
    forward_(t, last);
  }
  if (t.ending) {
    t.state = *t.ending;
    return;
  }
  auto results = evaluate(t, now_ms);
  bool held = std::all_of(results.begin(), results.end(),
                          [](const ThresholdResult& r) { return r.held; });
  t.state = held ? LoadState::kPassed : LoadState::kFailed;
}

bool Loads::end(LoadTest& t, LoadState state, std::string reason, int64_t now_ms) {
  if (t.ended() || t.ending) return false;
  t.ending = state;
  t.stopping_ms = now_ms;
  if (t.target_event.is_null() && !reason.empty()) {  // else the target's event says why
    t.events.push_back(
        {elapsed_s(t, now_ms), state == LoadState::kAborted ? "aborted" : "stopped", reason});
  }
  if (!reason.empty()) t.reason = t.reason.empty() ? reason : reason + "; " + t.reason;
  finish_if_done(t, now_ms);
  return true;
}

std::vector<ThresholdResult> Loads::evaluate(const LoadTest& t, int64_t now_ms) const {
  std::vector<ThresholdResult> out;
  for (const load::Threshold& th : t.spec.thresholds) {
    double v = threshold_value(th, t, elapsed_s(t, now_ms));
    out.push_back({&th, v, th.holds(v)});
  }
  return out;
}

std::vector<ThresholdResult> Loads::crossed_aborting(const LoadTest& t, int64_t now_ms) const {
  std::vector<ThresholdResult> out;
  for (const ThresholdResult& r : evaluate(t, now_ms)) {
    if (r.threshold->abort_on_fail && !r.held &&
        static_cast<uint64_t>(t.seconds) * 1000 >= r.threshold->delay_ms) {
      out.push_back(r);
    }
  }
  return out;
}

namespace {

// Each step's requests, errors and latency over the whole test.
std::vector<api::LoadStepTotals> steps_of(const LoadTest& t) {
  std::vector<api::LoadStepTotals> steps;
  for (const auto& [index, s] : t.total.steps) {
    steps.push_back({index, index < t.step_names.size() ? t.step_names[index] : "", s.requests,
                     errors_of(s), latency_of(s.latency), latency_of(s.raw)});
  }
  return steps;
}

}  // namespace

std::vector<api::ThresholdOutcome> Loads::thresholds_of(const LoadTest& t, int64_t now_ms) const {
  std::vector<api::ThresholdOutcome> out;
  for (const ThresholdResult& r : evaluate(t, now_ms)) {
    const bool latency = load::is_latency(r.threshold->metric);
    out.push_back({r.threshold->name, latency ? r.value / 1000 : r.value, r.held});
  }
  return out;
}

api::LoadAnswer Loads::answer(const LoadTest& t, bool with_series, int64_t now_ms) const {
  ipc::StepSecond all = all_steps(t.total);
  api::LoadAnswer a;
  for (const json& s : t.series) {
    a.vus_max = std::max(a.vus_max, s["vus"].get<uint64_t>());
    a.connections.max = std::max(a.connections.max, s["connections"].get<uint64_t>());
  }
  a.id = t.id;
  a.name = t.name;
  a.state = std::string(to_string(t.state));
  a.reason = t.reason;
  a.model = std::string(load::to_string(t.spec.model));
  a.load = t.load;
  a.created = iso8601_utc(t.created_ms);
  if (t.ended_ms != 0) a.ended = iso8601_utc(t.ended_ms);
  a.duration_s = static_cast<double>(t.spec.duration_ms()) / 1000;
  a.elapsed_s = elapsed_s(t, now_ms);
  a.workers = static_cast<int64_t>(t.workers);
  a.vus = t.series.empty() ? 0 : t.series.back()["vus"].get<uint64_t>();
  a.requests = all.requests;
  a.rps = static_cast<double>(all.requests) / a.elapsed_s;
  a.bytes = all.bytes;
  a.iterations = {t.total.passed, t.total.failed, t.total.dropped, t.total.interrupted};
  a.errors = errors_of(all);
  a.connections.open = t.series.empty() ? 0 : t.series.back()["connections"].get<uint64_t>();
  a.connections.opened = t.total.opened;
  a.connections.failed = t.total.connect_failed;
  a.connections.closed = t.total.closed;
  for (const auto& [code, n] : t.total.close_codes)
    a.connections.close_codes[std::to_string(code)] = n;
  a.messages = {t.total.messages_sent, t.total.messages_received,
                static_cast<double>(t.total.messages_sent) / a.elapsed_s,
                static_cast<double>(t.total.messages_received) / a.elapsed_s};
  a.tls = {t.total.handshakes, t.total.handshakes - t.total.resumed, t.total.resumed,
           latency_of(t.total.handshake)};
  a.protocols = {t.total.http1, t.total.http2};
  a.corrected = t.spec.model == load::Model::kOpen || t.spec.pace_ms != 0;
  a.latency = latency_of(all.latency);
  a.latency_raw = latency_of(all.raw);
  a.start_lateness = {latency_of(t.total.late),
                      t.total.late.count() - t.total.late.count_at_or_below(5000)};
  a.steps = steps_of(t);
  a.thresholds = thresholds_of(t, now_ms);
  a.reasons = t.total.reasons;
  a.reason_traces = t.total.reason_traces;
  a.events = events_of(t, a.elapsed_s);
  for (const ipc::SlowRequest& r : t.total.slowest) {
    a.slowest.push_back({static_cast<double>(r.second), r.step,
                         r.step < t.step_names.size() ? t.step_names[r.step] : "",
                         static_cast<double>(r.us) / 1000, r.status, r.outcome, r.trace});
  }
  if (t.spec.watch.any()) a.target = target_of(t, with_series);
  if (t.host_count > 1) a.cluster = cluster_of(t);
  if (with_series) a.series = t.series;
  return a;
}

}  // namespace corral::master
