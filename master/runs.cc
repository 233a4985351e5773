#include "master/runs.h"

#include <algorithm>
#include <random>

#include "shared/proc.h"

namespace corral::master {
namespace {

using nlohmann::json;

std::string new_run_id(uint64_t n) {
  static std::mt19937_64 rng{std::random_device{}()};
  char buf[24];
  std::snprintf(buf, sizeof(buf), "r%llu-%04x", static_cast<unsigned long long>(n),
                static_cast<unsigned>(rng() & 0xffff));
  return buf;
}

json time_or_null(int64_t ms) { return ms != 0 ? json(iso8601_utc(ms)) : json(nullptr); }

int64_t percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

}  // namespace

std::string_view to_string(InstanceState s) {
  switch (s) {
#define CORRAL_INSTANCE_CASE(name, text) \
  case InstanceState::name:              \
    return text;
    CORRAL_INSTANCE_STATES(CORRAL_INSTANCE_CASE)
#undef CORRAL_INSTANCE_CASE
  }
  return "unknown";
}

std::optional<InstanceState> instance_state_from(std::string_view s) {
#define CORRAL_INSTANCE_PARSE(name, text) \
  if (s == text) return InstanceState::name;
  CORRAL_INSTANCE_STATES(CORRAL_INSTANCE_PARSE)
#undef CORRAL_INSTANCE_PARSE
  return std::nullopt;
}

bool Run::finished() const {
  return count(InstanceState::kQueued) == 0 && count(InstanceState::kRunning) == 0;
}

const char* Run::state() const {
  if (cancelled) return "cancelled";
  if (finished()) return "finished";
  if (count(InstanceState::kQueued) == instances.size()) return "queued";
  return "running";
}

Run& Runs::create(std::shared_ptr<const scenario::Scenario> scenario, json vars, uint32_t instances,
                  int64_t now_ms) {
  auto run = std::make_unique<Run>();
  run->id = new_run_id(next_id_++);
  run->scenario = std::move(scenario);
  run->vars = std::move(vars);
  run->created_ms = now_ms;
  run->instances.resize(instances);
  run->counts[static_cast<size_t>(InstanceState::kQueued)] = instances;
  Run& ref = *run;
  by_id_[run->id] = run.get();
  runs_.push_back(std::move(run));
  prune();
  return ref;
}

Run* Runs::find(const std::string& id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

void Runs::set_state(Run& run, uint32_t index, InstanceState to) {
  InstanceRecord& in = run.instances[index];
  run.counts[static_cast<size_t>(in.state)] -= 1;
  run.counts[static_cast<size_t>(to)] += 1;
  in.state = to;
}

void Runs::finish_instance(Run& run, uint32_t index, InstanceState state, const std::string& reason,
                           int64_t started_ms, int64_t ended_ms) {
  InstanceRecord& in = run.instances[index];
  set_state(run, index, state);
  in.reason = reason;
  in.worker = -1;
  if (in.started_ms == 0) in.started_ms = started_ms;
  in.ended_ms = ended_ms;
  run.durations_ms.push_back(ended_ms - in.started_ms);
  if (state == InstanceState::kFailed || state == InstanceState::kErrored) {
    run.failures[{in.next_step, reason}] += 1;
  }
  if (run.finished() && run.finished_ms == 0) run.finished_ms = ended_ms;
}

void Runs::apply(int slot, const json& ev, int64_t now_ms) {
  Run* run = find(ev.value("run", ""));
  if (run == nullptr) return;
  uint32_t i = ev.value("i", uint32_t{0});
  if (i >= run->instances.size()) return;
  InstanceRecord& in = run->instances[i];
  if (in.state != InstanceState::kRunning || in.worker != slot) return;  // stale or cancelled
  std::string t = ev.value("t", "");
  if (t == "step") {
    StepRecord r;
    r.step = ev.value("step", 0u);
    r.state = ev.value("state", "");
    r.attempts = ev.value("attempts", 0u);
    r.started_ms = ev.value("started_ms", int64_t{0});
    r.ended_ms = ev.value("ended_ms", now_ms);
    r.status = ev.value("status", 0);
    r.until_ms = ev.value("until_ms", int64_t{-1});
    r.reason = ev.value("reason", "");
    if (in.started_ms == 0) in.started_ms = r.started_ms;
    if (r.state == "passed") in.next_step = r.step + 1;
    if (auto v = ev.find("vars"); v != ev.end()) in.vars = *v;
    in.steps.push_back(std::move(r));
  } else if (t == "done") {
    auto state =
        instance_state_from(ev.value("state", "errored")).value_or(InstanceState::kErrored);
    finish_instance(*run, i, state, ev.value("reason", ""), ev.value("started_ms", now_ms),
                    ev.value("ended_ms", now_ms));
  }
}

size_t Runs::requeue_worker(int slot, const std::string& why) {
  size_t n = 0;
  for (auto& run : runs_) {
    if (run->finished()) continue;
    for (uint32_t i = 0; i < run->instances.size(); ++i) {
      InstanceRecord& in = run->instances[i];
      if (in.state != InstanceState::kRunning || in.worker != slot) continue;
      in.worker = -1;
      if (in.crash_resumes >= max_resumes_) {
        // Its worker keeps dying with it: one poisonous instance must not take every worker.
        finish_instance(*run, i, InstanceState::kErrored,
                        "resumed " + std::to_string(in.crash_resumes) +
                            " times and its worker died again (" + why + ")",
                        in.started_ms, unix_ms_now());
        continue;
      }
      set_state(*run, i, InstanceState::kQueued);
      in.resumes += 1;
      in.crash_resumes += 1;
      in.resume_reasons.push_back(why);
      run->requeued.push_back(i);
      ++n;
    }
  }
  return n;
}

size_t Runs::hand_back(int slot, const json& instances) {
  size_t n = 0;
  for (const auto& [id, list] : instances.items()) {
    Run* run = find(id);
    if (run == nullptr || !list.is_object()) continue;
    for (const auto& [key, cp] : list.items()) {
      uint32_t i = static_cast<uint32_t>(std::stoul(key));
      if (i >= run->instances.size()) continue;
      InstanceRecord& in = run->instances[i];
      if (in.state != InstanceState::kRunning || in.worker != slot) continue;
      set_state(*run, i, InstanceState::kQueued);
      in.worker = -1;
      in.checkpoint = cp;
      in.resumes += 1;
      in.resume_reasons.push_back("worker_stopped");
      run->requeued.push_back(i);
      ++n;
    }
  }
  return n;
}

size_t Runs::cancel(Run& run, int64_t now_ms) {
  if (run.finished()) return 0;  // nothing left to cancel: the run keeps its outcome
  size_t n = 0;
  run.cancelled = true;
  for (uint32_t i = 0; i < run.instances.size(); ++i) {
    if (is_terminal(run.instances[i].state)) continue;
    set_state(run, i, InstanceState::kCancelled);
    run.instances[i].ended_ms = now_ms;
    run.instances[i].worker = -1;
    ++n;
  }
  run.next_fresh = static_cast<uint32_t>(run.instances.size());
  run.requeued.clear();
  if (run.finished_ms == 0) run.finished_ms = now_ms;
  return n;
}

size_t Runs::pending() const {
  size_t n = 0;
  for (const auto& r : runs_) n += r->pending();
  return n;
}

void Runs::prune() {
  size_t finished = 0;
  for (const auto& r : runs_) finished += r->finished() ? 1 : 0;
  for (auto it = runs_.begin(); finished > keep_finished_ && it != runs_.end();) {
    if ((*it)->finished()) {
      by_id_.erase((*it)->id);
      it = runs_.erase(it);
      --finished;
    } else {
      ++it;
    }
  }
}

json Runs::summary_json(const Run& run) const {
  json counts = json::object();
  for (size_t s = 0; s < kInstanceStates; ++s) {
    counts[std::string(to_string(static_cast<InstanceState>(s)))] = run.counts[s];
  }
  return {{"id", run.id},
          {"scenario", run.scenario->name},
          {"state", run.state()},
          {"instances", run.instances.size()},
          {"created_at", time_or_null(run.created_ms)},
          {"finished_at", time_or_null(run.finished_ms)},
          {"counts", counts}};
}

json Runs::detail_json(const Run& run) const {
  json j = summary_json(run);
  j["duration_ms"] = {
      {"p50", percentile(run.durations_ms, 0.50)},
      {"p95", percentile(run.durations_ms, 0.95)},
      {"max", run.durations_ms.empty()
                  ? 0
                  : *std::max_element(run.durations_ms.begin(), run.durations_ms.end())}};
  std::vector<std::pair<uint32_t, json>> failures;
  for (const auto& [key, count] : run.failures) {
    const auto& steps = run.scenario->steps;
    std::string name = key.first < steps.size() ? steps[key.first].name : "";
    failures.push_back(
        {count,
         {{"step", key.first}, {"step_name", name}, {"reason", key.second}, {"count", count}}});
  }
  std::stable_sort(failures.begin(), failures.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  j["failures"] = json::array();
  for (size_t k = 0; k < failures.size() && k < 20; ++k)
    j["failures"].push_back(failures[k].second);
  j["vars"] = run.vars;
  return j;
}

json Runs::instance_json(const Run& run, uint32_t index, bool with_steps) const {
  const InstanceRecord& in = run.instances[index];
  const auto& steps = run.scenario->steps;
  json j = {{"i", index},
            {"state", to_string(in.state)},
            {"step", in.next_step},
            {"reason", in.reason},
            {"resumes", in.resumes},
            {"resume_reasons", in.resume_reasons},
            {"started_at", time_or_null(in.started_ms)},
            {"ended_at", time_or_null(in.ended_ms)},
            {"duration_ms", in.ended_ms != 0 ? in.ended_ms - in.started_ms : 0}};
  if (in.worker >= 0) j["worker"] = in.worker;
  if (!with_steps) return j;
  j["vars"] = in.vars.is_null() ? json::object() : in.vars;
  j["steps"] = json::array();
  for (const auto& r : in.steps) {
    json s = {{"step", r.step},
              {"name", r.step < steps.size() ? steps[r.step].name : ""},
              {"state", r.state},
              {"attempts", r.attempts},
              {"started_at", time_or_null(r.started_ms)},
              {"ended_at", time_or_null(r.ended_ms)},
              {"duration_ms", r.ended_ms - r.started_ms},
              {"status", r.status}};
    if (r.until_ms >= 0) s["until_ms"] = r.until_ms;
    if (!r.reason.empty()) s["reason"] = r.reason;
    j["steps"].push_back(std::move(s));
  }
  return j;
}

}  // namespace corral::master
