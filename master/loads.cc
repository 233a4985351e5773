#include "master/loads.h"

#include "master/ids.h"

#include <algorithm>

#include "shared/proc.h"

namespace corral::master {
namespace {

using nlohmann::json;
using stats::Histogram;

double ms(uint64_t us) { return static_cast<double>(us) / 1000.0; }  // microseconds are exact

json latency_json(const Histogram& h) {
  return {{"count", h.count()},        {"min", ms(h.min())},
          {"mean", ms(static_cast<uint64_t>(h.mean()))},
          {"p50", ms(h.value_at(50))}, {"p90", ms(h.value_at(90))},
          {"p95", ms(h.value_at(95))}, {"p99", ms(h.value_at(99))},
          {"p99.9", ms(h.value_at(99.9))}, {"max", ms(h.max())}};
}

// corral's own lateness in starting iterations, and how many it started more than 5 ms late.
json start_lateness_json(const Histogram& late) {
  json j = latency_json(late);
  j["over_5ms"] = late.count() - late.count_at_or_below(5000);
  return j;
}

json errors_json(const ipc::StepSecond& s) {
  double rate = s.requests == 0 ? 0.0 : static_cast<double>(s.errors()) / s.requests;
  return {{"count", s.errors()},   {"rate", rate},         {"status", s.status},
          {"transport", s.transport}, {"timeout", s.timeout}, {"expect", s.expect}};
}

// Every step of `second` (or those named `step`) added into one.
ipc::StepSecond merged_steps(const ipc::LoadSecond& second, const std::string& step,
                             const std::vector<std::string>& names) {
  ipc::StepSecond all;
  for (const auto& [index, s] : second.steps) {
    if (!step.empty() && (index >= names.size() || names[index] != step)) continue;
    all.add(s);
  }
  return all;
}

json second_json(uint32_t t, const ipc::LoadSecond& s) {
  ipc::StepSecond all = merged_steps(s, "", {});
  return {{"t", t},
          {"vus", s.vus},
          {"running", s.running},
          {"rps", all.requests},
          {"iterations", s.passed + s.failed},
          {"failed", s.failed},
          {"dropped", s.dropped},
          {"connections", s.connections},
          {"connect_failed", s.connect_failed},
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
json target_json(const LoadTest& t, bool with_series) {
  const load::Watch& w = t.spec.watch;
  double rss_max = 0, cpu_max = 0;
  for (const json& s : t.target) {
    if (s.contains("rss")) rss_max = std::max(rss_max, s["rss"].get<double>());
    if (s.contains("cpu")) cpu_max = std::max(cpu_max, s["cpu"].get<double>());
  }
  json j = {{"pid", w.pid != 0 ? json(w.pid) : json(nullptr)},
            {"url", w.url.empty() ? json(nullptr) : json(w.url)},
            {"last", t.target.empty() ? json(nullptr) : t.target.back()},
            {"rss_max", rss_max},
            {"cpu_max", cpu_max},
            {"event", t.target_event}};
  if (with_series) j["series"] = t.target;
  return j;
}

// A test spread over hosts: this host's share and, on the origin, the other hosts' shares.
json cluster_json(const LoadTest& t) {
  json others = json::array();
  for (const auto& [slot, r] : t.remote) {
    others.push_back({{"host", r.host},
                      {"share", Loads::share_of_slot(slot)},
                      {"state", r.state.empty() ? "starting" : r.state},
                      {"taking_part", t.slots.count(slot) != 0}});
  }
  return {{"hosts", t.host_count},
          {"share", t.host_index},
          {"origin", t.origin.empty() ? json(nullptr) : json(t.origin)},
          {"others", others}};
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

double threshold_value(const load::Threshold& th, const ipc::LoadSecond& total,
                       const std::vector<std::string>& step_names, double elapsed) {
  const ipc::StepSecond steps = merged_steps(total, th.step, step_names);
  switch (th.metric) {
    case load::Metric::kLatency:
    case load::Metric::kLatencyRaw: {
      const Histogram& h = th.metric == load::Metric::kLatency ? steps.latency : steps.raw;
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

Status Loads::on_second(int slot, ipc::LoadSecond&& s, int64_t now_ms) {
  LoadTest* t = find(s.load);
  if (t == nullptr) return protocol_error("load_stats: no load test \"" + s.load + "\"");
  if (t->slots.count(slot) == 0) return Status::ok();  // dropped from the test already
  const uint32_t second = s.second;
  const bool done = s.done;
  if (second < t->seconds) {
    t->total.add(s);  // a second already summed up: it still counts in the totals
    if (!t->origin.empty() && forward_) {
      s.done = false;  // the share's end is sent once its last second is complete
      forward_(*t, s);
    }
  } else {
    t->pending[second].add(s);
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
  if (!t.reason.empty()) t.reason += "; ";
  t.reason += why;
  complete_seconds(t);
  finish_if_done(t, now_ms);
}

// Seconds every remaining worker has reported go into the totals and the series.
void Loads::complete_seconds(LoadTest& t) {
  while (!t.pending.empty()) {
    auto first = t.pending.begin();
    bool complete = t.slots.empty() || std::all_of(t.slots.begin(), t.slots.end(), [&](int slot) {
                      auto it = t.last_second.find(slot);
                      return it != t.last_second.end() && it->second >= first->first;
                    });
    if (!complete) return;
    t.total.add(first->second);
    t.series.push_back(second_json(first->first, first->second));
    if (!t.origin.empty() && forward_) {
      first->second.second = first->first;
      forward_(t, first->second);
    }
    t.seconds = first->first + 1;
    t.pending.erase(first);
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
  if (!reason.empty()) t.reason = t.reason.empty() ? reason : reason + "; " + t.reason;
  finish_if_done(t, now_ms);
  return true;
}

std::vector<ThresholdResult> Loads::evaluate(const LoadTest& t, int64_t now_ms) const {
  std::vector<ThresholdResult> out;
  for (const load::Threshold& th : t.spec.thresholds) {
    double v = threshold_value(th, t.total, t.step_names, elapsed_s(t, now_ms));
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
json steps_json(const LoadTest& t) {
  json steps = json::array();
  for (const auto& [index, s] : t.total.steps) {
    steps.push_back({{"index", index},
                     {"name", index < t.step_names.size() ? t.step_names[index] : ""},
                     {"requests", s.requests},
                     {"errors", errors_json(s)},
                     {"latency", latency_json(s.latency)},
                     {"latency_raw", latency_json(s.raw)}});
  }
  return steps;
}

}  // namespace

json Loads::thresholds_json(const LoadTest& t, int64_t now_ms) const {
  json thresholds = json::array();
  for (const ThresholdResult& r : evaluate(t, now_ms)) {
    const bool latency = r.threshold->metric == load::Metric::kLatency ||
                         r.threshold->metric == load::Metric::kLatencyRaw;
    thresholds.push_back({{"name", r.threshold->name},
                          {"value", latency ? r.value / 1000 : r.value},
                          {"ok", r.held}});
  }
  return thresholds;
}

json Loads::to_json(const LoadTest& t, bool with_series, int64_t now_ms) const {
  ipc::StepSecond all = merged_steps(t.total, "", {});
  uint64_t vus_max = 0, connections_max = 0;
  for (const json& s : t.series) {
    vus_max = std::max(vus_max, s["vus"].get<uint64_t>());
    connections_max = std::max(connections_max, s["connections"].get<uint64_t>());
  }
  const double elapsed = elapsed_s(t, now_ms);
  json j = {{"id", t.id},
            {"name", t.name},
            {"state", to_string(t.state)},
            {"reason", t.reason},
            {"model", load::to_string(t.spec.model)},
            {"load", t.load},
            {"created", iso8601_utc(t.created_ms)},
            {"ended", t.ended_ms != 0 ? json(iso8601_utc(t.ended_ms)) : json(nullptr)},
            {"duration_s", static_cast<double>(t.spec.duration_ms()) / 1000},
            {"elapsed_s", elapsed},
            {"workers", t.workers},
            {"vus", t.series.empty() ? 0 : t.series.back()["vus"].get<uint64_t>()},
            {"vus_max", vus_max},
            {"requests", all.requests},
            {"rps", static_cast<double>(all.requests) / elapsed},
            {"bytes", all.bytes},
            {"iterations",
             {{"passed", t.total.passed},
              {"failed", t.total.failed},
              {"dropped", t.total.dropped},
              {"interrupted", t.total.interrupted}}},
            {"errors", errors_json(all)},
            {"connections",
             {{"open", t.series.empty() ? 0 : t.series.back()["connections"].get<uint64_t>()},
              {"max", connections_max},
              {"opened", t.total.opened},
              {"failed", t.total.connect_failed},
              {"closed", t.total.closed}}},
            {"tls",
             {{"handshakes", t.total.handshakes},
              {"full", t.total.handshakes - t.total.resumed},
              {"resumed", t.total.resumed},
              {"handshake", latency_json(t.total.handshake)}}},
            {"protocols", {{"HTTP/1.1", t.total.http1}, {"HTTP/2", t.total.http2}}},
            {"corrected", t.spec.model == load::Model::kOpen || t.spec.pace_ms != 0},
            {"latency", latency_json(all.latency)},
            {"latency_raw", latency_json(all.raw)},
            {"start_lateness", start_lateness_json(t.total.late)},
            {"steps", steps_json(t)},
            {"thresholds", thresholds_json(t, now_ms)},
            {"reasons", t.total.reasons}};
  if (t.spec.watch.any()) j["target"] = target_json(t, with_series);
  if (t.host_count > 1) j["cluster"] = cluster_json(t);
  if (with_series) j["series"] = t.series;
  return j;
}

}  // namespace corral::master
