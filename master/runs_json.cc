// What the runs API shows of a run and its instances.
#include <algorithm>

#include "master/runs.h"
#include "shared/ipc/vars.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using nlohmann::json;

json time_or_null(int64_t ms) { return ms != 0 ? json(iso8601_utc(ms)) : json(nullptr); }

int64_t percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// Where each branch of the parallel step an instance is at stands, from its checkpoint
// (Checkpoint::branches): [{"name", "state", "step"?, "step_name"?, "reason"?}]; null when it is
// at no parallel step.
json branches_json(const scenario::Scenario& scenario, const json& checkpoint) {
  if (!checkpoint.is_object()) return nullptr;
  auto b = checkpoint.find("branches");
  uint64_t at = checkpoint.value("step", uint64_t{0});
  if (b == checkpoint.end() || !b->is_array() || at >= scenario.steps.size()) return nullptr;
  const auto& steps = scenario.steps;
  const auto& branches = steps[at].branches;
  json out = json::array();
  for (size_t i = 0; i < b->size() && i < branches.size(); ++i) {
    const json& e = (*b)[i];
    json row = {{"name", branches[i].name}, {"state", "waiting"}};
    if (!e.is_object()) {
      out.push_back(std::move(row));
      continue;
    }
    if (e.contains("passed")) row["state"] = "passed";
    if (auto f = e.find("failed"); f != e.end()) {
      row["state"] = e.value("outcome", "failed");
      row["reason"] = *f;
    }
    if (auto c = e.find("checkpoint"); c != e.end() && c->is_object()) {
      uint64_t step = c->value("step", uint64_t{0});
      bool done = step >= steps[branches[i].first].list_end;
      row["state"] = done ? "passed" : "running";
      if (!done && step < steps.size()) {
        row["step"] = step;
        row["step_name"] = steps[step].name;
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

json Runs::make_summary(const Run& run) const {
  json j;
  j["counts"] = json::array();
  for (uint32_t c : run.counts) j["counts"].push_back(c);
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
  return j;
}

json Runs::summary_json(const Run& run) const {
  // A run of a cluster, while it runs: its instances on every host, as the journal last had them.
  const bool cluster = run.cluster_counts.has_value() && run.finished_ms == 0;
  const auto& shown = cluster ? *run.cluster_counts : run.counts;
  json counts = json::object();
  for (size_t s = 0; s < kInstanceStates; ++s) {
    counts[std::string(to_string(static_cast<InstanceState>(s)))] = shown[s];
  }
  const char* state = run.state();
  if (cluster && !run.cancelled) {
    state = shown[static_cast<size_t>(InstanceState::kQueued)] == run.size ? "queued" : "running";
  }
  return {{"id", run.id},
          {"scenario", run.scenario->name},
          {"state", state},
          {"instances", run.size},
          {"created_at", time_or_null(run.created_ms)},
          {"finished_at", time_or_null(run.finished_ms)},
          {"counts", counts}};
}

json Runs::detail_json(const Run& run) const {
  json j = summary_json(run);
  json parts = run.whole || !run.summary.is_object() ? make_summary(run) : run.summary;
  j["duration_ms"] = parts["duration_ms"];
  j["failures"] = parts["failures"];
  j["vars"] = run.vars;
  j["priority"] = run.priority;
  // The scenario's own steps (not those inside a parallel step's branches), for reports that
  // list the steps an instance never reached.
  j["steps"] = json::array();
  for (size_t i = 0; i < run.scenario->steps.size(); ++i) {
    const auto& step = run.scenario->steps[i];
    if (step.branch.empty()) j["steps"].push_back({{"step", i}, {"name", step.name}});
  }
  if (!run.quarantine.empty()) {
    j["quarantine"] = {{"reason", run.quarantine}, {"deaths", run.deaths_ms.size()}};
  }
  if (run.data.is_object()) {  // a run over data rows: the file, and the rows it skipped
    j["data"] = run.data;
    j["data"].erase("index");
  }
  return j;
}

json Runs::instance_json(const Run& run, uint32_t index, bool with_steps) const {
  const InstanceRecord& in = run.instance(index);
  const InstanceDetail& more = in.detail();
  const auto& steps = run.scenario->steps;
  // One cancelled before it was placed has no record: it ended with its run.
  const int64_t ended_ms =
      in.ended_ms != 0 || !is_terminal(in.state) ? in.ended_ms : run.finished_ms;
  json j = {{"i", index},
            {"state", to_string(in.state)},
            {"step", in.next_step},
            {"reason", more.reason},
            {"resumes", in.resumes},
            {"resume_reasons", more.resume_reasons},
            {"started_at", time_or_null(in.started_ms)},
            {"ended_at", time_or_null(ended_ms)},
            {"duration_ms", elapsed_ms(in.started_ms, ended_ms)}};
  if (in.worker >= 0) j["worker"] = in.worker;
  if (auto c = run.callbacks.find(index); c != run.callbacks.end()) {
    j["callback"] = {{"step", c->second["step"]}, {"called", true}};  // not used yet
  }
  if (json b = branches_json(*run.scenario, more.checkpoint); !b.is_null()) j["branches"] = b;
  if (!with_steps) return j;
  j["vars"] = ipc::vars_for_display(more.vars);
  j["steps"] = json::array();
  for (const auto& r : more.steps) {
    json s = {{"step", r.step},
              {"name", r.step < steps.size() ? steps[r.step].name : ""},
              {"state", r.state},
              {"attempts", r.attempts},
              {"started_at", time_or_null(r.started_ms)},
              {"ended_at", time_or_null(r.ended_ms)},
              {"duration_ms", elapsed_ms(r.started_ms, r.ended_ms)},
              {"status", r.status}};
    if (r.step < steps.size() && !steps[r.step].branch.empty()) s["branch"] = steps[r.step].branch;
    if (r.until_ms >= 0) s["until_ms"] = r.until_ms;
    if (r.tls_us > 0) s["tls_ms"] = static_cast<double>(r.tls_us) / 1000;
    if (!r.reason.empty()) s["reason"] = r.reason;
    if (!r.url.empty()) s["url"] = r.url;
    if (!r.body.empty()) s["body"] = r.body;
    j["steps"].push_back(std::move(s));
  }
  return j;
}

}  // namespace corral::master
