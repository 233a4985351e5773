#include "shared/api/runs.h"

#include <utility>

#include "shared/api/present.h"
#include "shared/api/read_array.h"
#include "shared/ipc/fields.h"

namespace corral::api {

using detail::array_of;
using detail::or_null;
using detail::present;
using ipc::detail::FieldReader;
using nlohmann::json;

namespace {

// The states of RunCounts by their names on the wire.
const std::pair<const char*, uint32_t RunCounts::*> kCountFields[] = {
    {"queued", &RunCounts::queued},   {"running", &RunCounts::running},
    {"passed", &RunCounts::passed},   {"failed", &RunCounts::failed},
    {"errored", &RunCounts::errored}, {"cancelled", &RunCounts::cancelled}};

// Reads the nullable text field `name` into `out` (none when null or absent).
void nullable_text(FieldReader& r, const json& j, const char* name,
                   std::optional<std::string>& out) {
  if (present(j, name)) r.text(name, out.emplace());
}

// Reads the array of strings `name`, when present, into `out`.
void read_texts(FieldReader& r, const json& j, const char* name, std::vector<std::string>& out) {
  if (!r.ok() || !present(j, name)) return;
  if (!j[name].is_array()) return r.fail(name, "expected an array");
  for (size_t i = 0; i < j[name].size(); ++i) {
    const json& text = j[name][i];
    if (!text.is_string()) {
      return r.fail(std::string(name) + "[" + std::to_string(i) + "]", "expected a string");
    }
    out.push_back(text.get<std::string>());
  }
}

json to_json(const RunCounts& c) {
  json j = json::object();
  for (const auto& [name, field] : kCountFields) j[name] = c.*field;
  return j;
}

json to_json(const BranchEntry& b) {
  json j = {{"name", b.name}, {"state", b.state}};
  if (b.step) j["step"] = *b.step;
  if (b.step_name) j["step_name"] = *b.step_name;
  if (b.reason) j["reason"] = *b.reason;
  return j;
}

json to_json(const StepEntry& s) {
  json j = {{"step", s.step},
            {"name", s.name},
            {"state", s.state},
            {"attempts", s.attempts},
            {"started_at", or_null(s.started_at)},
            {"ended_at", or_null(s.ended_at)},
            {"duration_ms", s.duration_ms},
            {"status", s.status}};
  if (!s.branch.empty()) j["branch"] = s.branch;
  if (s.until_ms) j["until_ms"] = *s.until_ms;
  if (s.tls_ms) j["tls_ms"] = *s.tls_ms;
  if (!s.reason.empty()) j["reason"] = s.reason;
  if (!s.url.empty()) j["url"] = s.url;
  if (!s.body.empty()) j["body"] = s.body;
  return j;
}

}  // namespace

uint32_t* RunCounts::of(std::string_view state) {
  for (const auto& [name, field] : kCountFields) {
    if (state == name) return &(this->*field);
  }
  return nullptr;
}

json to_json(const RunDuration& d) { return {{"p50", d.p50}, {"p95", d.p95}, {"max", d.max}}; }

json to_json(const RunFailure& f) {
  return {{"step", f.step}, {"step_name", f.step_name}, {"reason", f.reason}, {"count", f.count}};
}

json to_json(const RunSummary& s) {
  return {{"id", s.id},
          {"scenario", s.scenario},
          {"state", s.state},
          {"instances", s.instances},
          {"created_at", or_null(s.created_at)},
          {"finished_at", or_null(s.finished_at)},
          {"counts", to_json(s.counts)}};
}

json to_json(const RunDetail& d) {
  json j = to_json(static_cast<const RunSummary&>(d));
  j["duration_ms"] = to_json(d.duration_ms);
  j["failures"] = array_of(d.failures);
  j["vars"] = d.vars;
  j["priority"] = d.priority;
  j["steps"] = array_of(d.steps, [](const RunStep& s) -> json {
    return {{"step", s.step}, {"name", s.name}};
  });
  if (d.quarantine) {
    j["quarantine"] = {{"reason", d.quarantine->reason}, {"deaths", d.quarantine->deaths}};
  }
  if (!d.data.is_null()) j["data"] = d.data;
  if (d.queued_reason) j["queued_reason"] = *d.queued_reason;
  return j;
}

json to_json(const InstanceEntry& e) {
  json j = {{"i", e.i},
            {"state", e.state},
            {"step", e.step},
            {"reason", e.reason},
            {"resumes", e.resumes},
            {"resume_reasons", e.resume_reasons},
            {"started_at", or_null(e.started_at)},
            {"ended_at", or_null(e.ended_at)},
            {"duration_ms", e.duration_ms}};
  if (e.worker) j["worker"] = *e.worker;
  if (e.callback) j["callback"] = {{"step", e.callback->step}, {"called", e.callback->called}};
  // (to_json of an entry's parts is this file's own: named here, as lookup by type misses it)
  if (e.branches)
    j["branches"] = array_of(*e.branches, [](const BranchEntry& b) { return to_json(b); });
  if (e.steps) {
    j["vars"] = e.vars;
    j["steps"] = array_of(*e.steps, [](const StepEntry& s) { return to_json(s); });
  }
  if (e.key) j["key"] = *e.key;
  if (e.row) j["row"] = *e.row;
  if (!e.row_error.empty()) j["row_error"] = e.row_error;
  if (!e.trace_id.empty()) j["trace_id"] = e.trace_id;
  return j;
}

json to_json(const InstancesAnswer& a) {
  return {{"run", a.run}, {"instances", array_of(a.instances)}, {"next", or_null(a.next)}};
}

json to_json(const RunsAnswer& a) { return {{"runs", array_of(a.runs)}}; }

json to_json(const SubmitAnswer& a) {
  json j = {{"run", a.run}, {"instances", a.instances}};
  if (a.data) {
    json bad = array_of(a.data->bad, [](const BadRow& b) -> json {
      return {{"line", b.line}, {"error", b.error}};
    });
    j["data"] = {{"rows", a.data->rows}, {"skipped", a.data->skipped}, {"bad", std::move(bad)}};
  }
  if (!a.warning.empty()) j["warning"] = a.warning;
  return j;
}

namespace {

void read_summary(FieldReader& r, const json& j, RunSummary& s) {
  r.text("id", s.id);
  r.text("scenario", s.scenario);
  r.text("state", s.state);
  r.u32("instances", s.instances);
  nullable_text(r, j, "created_at", s.created_at);
  nullable_text(r, j, "finished_at", s.finished_at);
  if (!r.ok() || !present(j, "counts")) return;
  FieldReader c(j["counts"], r.path("counts"));
  for (const auto& [name, field] : kCountFields) c.u32(name, s.counts.*field);
  r.take(c);
}

void read_detail(FieldReader& r, const json& j, RunDetail& d) {
  read_summary(r, j, d);
  if (r.ok() && present(j, "duration_ms")) {
    FieldReader t(j["duration_ms"], r.path("duration_ms"));
    t.i64("p50", d.duration_ms.p50);
    t.i64("p95", d.duration_ms.p95);
    t.i64("max", d.duration_ms.max);
    r.take(t);
  }
  detail::read_array(r, j, "failures", [&](FieldReader& e, const json&) {
    RunFailure& f = d.failures.emplace_back();
    e.u32("step", f.step);
    e.text("step_name", f.step_name);
    e.text("reason", f.reason);
    e.u32("count", f.count);
  });
  r.any("vars", d.vars);
  r.u32("priority", d.priority);
  detail::read_array(r, j, "steps", [&](FieldReader& e, const json&) {
    RunStep& s = d.steps.emplace_back();
    e.u32("step", s.step);
    e.text("name", s.name);
  });
  if (r.ok() && present(j, "quarantine")) {
    FieldReader q(j["quarantine"], r.path("quarantine"));
    RunQuarantine& out = d.quarantine.emplace();
    q.text("reason", out.reason);
    q.u64("deaths", out.deaths);
    r.take(q);
  }
  r.any("data", d.data);
  nullable_text(r, j, "queued_reason", d.queued_reason);
}

void read_step(FieldReader& e, const json& j, StepEntry& s) {
  e.u32("step", s.step);
  e.text("name", s.name);
  e.text("state", s.state);
  e.u32("attempts", s.attempts);
  nullable_text(e, j, "started_at", s.started_at);
  nullable_text(e, j, "ended_at", s.ended_at);
  e.i64("duration_ms", s.duration_ms);
  e.i32("status", s.status);
  e.text("branch", s.branch);
  if (present(j, "until_ms")) e.i64("until_ms", s.until_ms.emplace());
  if (present(j, "tls_ms")) e.number("tls_ms", s.tls_ms.emplace());
  e.text("reason", s.reason);
  e.text("url", s.url);
  e.text("body", s.body);
}

void read_branch(FieldReader& e, const json& j, BranchEntry& b) {
  e.text("name", b.name);
  e.text("state", b.state);
  if (present(j, "step")) e.u32("step", b.step.emplace());
  nullable_text(e, j, "step_name", b.step_name);
  nullable_text(e, j, "reason", b.reason);
}

// The parts of an instance beyond its place: callback, branches, vars, steps, data row.
void read_instance_parts(FieldReader& r, const json& j, InstanceEntry& e) {
  if (r.ok() && present(j, "callback")) {
    FieldReader c(j["callback"], r.path("callback"));
    InstanceCallback& out = e.callback.emplace();
    c.u32("step", out.step);
    c.boolean("called", out.called);
    r.take(c);
  }
  if (present(j, "branches")) e.branches.emplace();
  detail::read_array(r, j, "branches", [&](FieldReader& b, const json& bj) {
    read_branch(b, bj, e.branches->emplace_back());
  });
  r.any("vars", e.vars);
  if (present(j, "steps")) e.steps.emplace();
  detail::read_array(r, j, "steps", [&](FieldReader& s, const json& sj) {
    read_step(s, sj, e.steps->emplace_back());
  });
  // A key column's value may be null in the row itself: present, not absent.
  if (j.is_object() && j.contains("key")) e.key = j["key"];
  if (present(j, "row")) e.row = j["row"];
  r.text("row_error", e.row_error);
  r.text("trace_id", e.trace_id);
}

Result<InstanceEntry> read_instance(const json& j, const std::string& path) {
  FieldReader r(j, path);
  InstanceEntry e;
  r.u32("i", e.i);
  r.text("state", e.state);
  r.u32("step", e.step);
  r.text("reason", e.reason);
  r.u32("resumes", e.resumes);
  read_texts(r, j, "resume_reasons", e.resume_reasons);
  nullable_text(r, j, "started_at", e.started_at);
  nullable_text(r, j, "ended_at", e.ended_at);
  r.i64("duration_ms", e.duration_ms);
  if (present(j, "worker")) r.i32("worker", e.worker.emplace());
  read_instance_parts(r, j, e);
  if (!r.ok()) return r.status();
  return e;
}

// `answer`'s array field `name`, checked: a list answer without its list is no answer at all.
Status list_of(const json& answer, const char* route, const char* name) {
  if (answer.is_object() && answer.contains(name) && answer[name].is_array()) return Status::ok();
  return protocol_error(std::string(route) + ": expected an object with a \"" + name + "\" array");
}

}  // namespace

Result<RunsAnswer> runs_from_json(const json& answer) {
  if (Status s = list_of(answer, "GET /runs", "runs"); !s) return s;
  RunsAnswer out;
  for (size_t i = 0; i < answer["runs"].size(); ++i) {
    FieldReader r(answer["runs"][i], "runs[" + std::to_string(i) + "]");
    read_summary(r, answer["runs"][i], out.runs.emplace_back());
    if (!r.ok()) return r.status();
  }
  return out;
}

Result<RunDetail> run_detail_from_json(const json& j) {
  FieldReader r(j, "run");
  RunDetail d;
  read_detail(r, j, d);
  if (!r.ok()) return r.status();
  return d;
}

Result<SubmitAnswer> submit_answer_from_json(const json& j) {
  FieldReader r(j, "");
  SubmitAnswer a;
  r.text("run", a.run, true);
  r.u64("instances", a.instances);
  r.text("warning", a.warning);
  if (present(j, "data")) {
    FieldReader d(j["data"], "data");
    DataRows& rows = a.data.emplace();
    d.u64("rows", rows.rows);
    d.u64("skipped", rows.skipped);
    detail::read_array(d, j["data"], "bad", [&](FieldReader& e, const json&) {
      BadRow& b = rows.bad.emplace_back();
      e.u64("line", b.line);
      e.text("error", b.error);
    });
    r.take(d);
  }
  if (!r.ok()) return r.status();
  return a;
}

Result<InstancesAnswer> instances_from_json(const json& answer) {
  if (Status s = list_of(answer, "GET /runs/<id>/instances", "instances"); !s) return s;
  FieldReader r(answer, "");
  InstancesAnswer out;
  r.text("run", out.run);
  if (present(answer, "next")) r.u32("next", out.next.emplace());
  if (!r.ok()) return r.status();
  const json& list = answer["instances"];
  for (size_t i = 0; i < list.size(); ++i) {
    auto e = read_instance(list[i], "instances[" + std::to_string(i) + "]");
    if (!e) return e.status();
    out.instances.push_back(std::move(*e));
  }
  return out;
}

Result<InstanceEntry> instance_from_json(const json& j) { return read_instance(j, "instance"); }

}  // namespace corral::api
