// What the runs API shows of a run and its instances, in the answer models of shared/api/runs.h.
#include <algorithm>
#include <cstdlib>

#include "master/runs.h"
#include "shared/ipc/vars.h"
#include "shared/proc.h"
#include "shared/trace_context.h"

namespace corral::master {
namespace {

using nlohmann::json;

std::optional<std::string> time_if_set(int64_t ms) {
  if (ms == 0) return std::nullopt;
  return iso8601_utc(ms);
}

int64_t percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

api::RunCounts counts_of(const std::array<uint32_t, kInstanceStates>& n) {
  api::RunCounts counts;
  for (size_t s = 0; s < kInstanceStates; ++s) {
    uint32_t* count = counts.of(to_string(static_cast<InstanceState>(s)));
    if (count == nullptr) std::abort();  // a state the answer model does not have
    *count = n[s];
  }
  return counts;
}

// A failure group of the run's answer: its step by index and name.
api::RunFailure failure_of(const Run& run, uint32_t step, std::string reason, uint32_t count) {
  const auto& steps = run.scenario->steps;
  return {step, step < steps.size() ? steps[step].name : "", std::move(reason), count};
}

// A run's durations and failures as the database summed them up.
void tallied_outcomes(const Run& run, const journal::RunTally& t, api::RunDetail& d) {
  d.duration_ms.p50 = t.p50_ms;
  d.duration_ms.p95 = t.p95_ms;
  d.duration_ms.max = t.max_ms;
  for (const journal::RunTally::Failure& f : t.failures) {
    d.failures.push_back(failure_of(run, f.step, f.reason, static_cast<uint32_t>(f.count)));
  }
}

// The durations of the instances held in memory and their most common failures.
void outcomes(const Run& run, api::RunDetail& d) {
  const std::vector<int64_t>& ms = run.durations_ms;
  d.duration_ms.p50 = percentile(ms, 0.50);
  d.duration_ms.p95 = percentile(ms, 0.95);
  d.duration_ms.max = ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end());
  std::vector<api::RunFailure> failures;
  for (const auto& [key, count] : run.failures) {
    failures.push_back(failure_of(run, key.first, key.second, count));
  }
  std::stable_sort(failures.begin(), failures.end(),
                   [](const auto& a, const auto& b) { return a.count > b.count; });
  if (failures.size() > 20) failures.resize(20);
  d.failures = std::move(failures);
}

// A finished run held as its summary: the durations and failures that make_summary() wrote
// when it ended, in the answer's own shape. False when the journal's copy does not read.
bool stored_outcomes(const json& summary, api::RunDetail& d) {
  json parts = json::object();
  for (const char* name : {"duration_ms", "failures"}) {
    if (summary.contains(name)) parts[name] = summary[name];
  }
  auto read = api::run_detail_from_json(parts);
  if (!read) return false;
  d.duration_ms = read->duration_ms;
  d.failures = std::move(read->failures);
  return true;
}

// Where branch `i` of the parallel step `at` stands, from its entry `e` in the checkpoint.
api::BranchEntry branch_entry(const scenario::Scenario& scenario, size_t at, size_t i,
                              const json& e) {
  const auto& steps = scenario.steps;
  const auto& branch = steps[at].branches[i];
  api::BranchEntry row;
  row.name = branch.name;
  row.state = "waiting";
  if (!e.is_object()) return row;
  if (e.contains("passed")) row.state = "passed";
  if (auto f = e.find("failed"); f != e.end()) {
    row.state = e.value("outcome", "failed");
    row.reason = f->is_string() ? f->get<std::string>() : f->dump();
  }
  if (auto c = e.find("checkpoint"); c != e.end() && c->is_object()) {
    uint64_t step = c->value("step", uint64_t{0});
    bool done = step >= steps[branch.first].list_end;
    row.state = done ? "passed" : "running";
    if (!done && step < steps.size()) {
      row.step = static_cast<uint32_t>(step);
      row.step_name = steps[step].name;
    }
  }
  return row;
}

// Where each branch of the parallel step an instance is at stands, from its checkpoint
// (Checkpoint::branches); none when it is at no parallel step.
std::optional<std::vector<api::BranchEntry>> branches_of(const scenario::Scenario& scenario,
                                                         const ipc::Checkpoint* checkpoint) {
  if (!checkpoint) return std::nullopt;
  const json& b = checkpoint->branches;
  const size_t at = checkpoint->step;
  if (!b.is_array() || at >= scenario.steps.size()) return std::nullopt;
  std::vector<api::BranchEntry> out;
  for (size_t i = 0; i < b.size() && i < scenario.steps[at].branches.size(); ++i) {
    out.push_back(branch_entry(scenario, at, i, b[i]));
  }
  return out;
}

api::StepEntry step_entry(const scenario::Scenario& scenario, const StepRecord& r) {
  const auto& steps = scenario.steps;
  api::StepEntry s;
  s.step = r.step;
  s.name = r.step < steps.size() ? steps[r.step].name : "";
  s.state = r.state;
  s.attempts = r.attempts;
  s.started_at = time_if_set(r.started_ms);
  s.ended_at = time_if_set(r.ended_ms);
  s.duration_ms = elapsed_ms(r.started_ms, r.ended_ms);
  s.status = r.status;
  if (r.step < steps.size()) s.branch = steps[r.step].branch;
  if (r.until_ms >= 0) s.until_ms = r.until_ms;
  if (r.tls_us > 0) s.tls_ms = static_cast<double>(r.tls_us) / 1000;
  s.reason = r.reason;
  s.url = r.url;
  s.body = r.body;
  return s;
}

}  // namespace

json Runs::make_summary(const Run& run, const journal::RunTally* tally) const {
  api::RunDetail parts;
  if (tally != nullptr) {
    tallied_outcomes(run, *tally, parts);
  } else {
    outcomes(run, parts);
  }
  json j = {{"counts", run.counts}, {"duration_ms", api::to_json(parts.duration_ms)}};
  j["failures"] = json::array();
  for (const api::RunFailure& f : parts.failures) j["failures"].push_back(api::to_json(f));
  return j;
}

api::RunSummary Runs::summary_of(const Run& run) const {
  // A run of a cluster, while it runs: its instances on every host, as the journal last had them.
  const bool cluster = run.cluster_counts.has_value() && run.finished_ms == 0;
  const auto& shown = cluster ? *run.cluster_counts : run.counts;
  api::RunSummary s;
  s.id = run.id;
  s.scenario = run.scenario->name;
  s.state = run.state();
  if (cluster && !run.cancelled) {
    s.state = shown[static_cast<size_t>(InstanceState::kQueued)] == run.size ? "queued" : "running";
  }
  s.instances = run.size;
  s.created_at = time_if_set(run.created_ms);
  s.finished_at = time_if_set(run.finished_ms);
  s.counts = counts_of(shown);
  return s;
}

api::RunDetail Runs::detail_of(const Run& run) const {
  api::RunDetail d;
  static_cast<api::RunSummary&>(d) = summary_of(run);
  if (run.whole || !run.summary.is_object() || !stored_outcomes(run.summary, d)) outcomes(run, d);
  d.vars = run.vars;
  d.priority = run.priority;
  // The scenario's own steps (not those inside a parallel step's branches), for reports that
  // list the steps an instance never reached.
  for (size_t i = 0; i < run.scenario->steps.size(); ++i) {
    const auto& step = run.scenario->steps[i];
    if (step.branch.empty()) d.steps.push_back({static_cast<uint32_t>(i), step.name});
  }
  if (!run.quarantine.empty())
    d.quarantine = api::RunQuarantine{run.quarantine, run.deaths_ms.size()};
  if (run.data.is_object()) {  // a run over data rows: the file, and the rows it skipped
    d.data = run.data;
    d.data.erase("index");
  }
  return d;
}

api::InstanceEntry Runs::instance_of(const Run& run, uint32_t index, bool with_steps) const {
  const InstanceRecord& in = run.instance(index);
  const InstanceDetail& more = in.detail();
  // One cancelled before it was placed has no record: it ended with its run.
  const int64_t ended_ms =
      in.ended_ms != 0 || !is_terminal(in.state) ? in.ended_ms : run.finished_ms;
  api::InstanceEntry e;
  e.i = index;
  e.state = to_string(in.state);
  e.step = in.next_step;
  e.reason = more.reason;
  e.resumes = in.resumes;
  e.resume_reasons = more.resume_reasons;
  e.started_at = time_if_set(in.started_ms);
  e.ended_at = time_if_set(ended_ms);
  e.duration_ms = elapsed_ms(in.started_ms, ended_ms);
  if (in.worker >= 0) e.worker = in.worker;
  if (auto c = run.callbacks.find(index); c != run.callbacks.end()) {
    e.callback = api::InstanceCallback{c->second.value("step", uint32_t{0}), true};  // not used yet
  }
  e.branches = branches_of(*run.scenario, more.checkpoint.get());
  if (!with_steps) return e;
  e.vars = ipc::vars_for_display(more.vars);
  if (run.scenario->trace_context) e.trace_id = instance_trace(run.id, index);
  e.steps.emplace();
  for (const StepRecord& r : more.steps) e.steps->push_back(step_entry(*run.scenario, r));
  return e;
}

}  // namespace corral::master
