// The answers of the runs API: GET /runs, GET /runs/<id>, GET /runs/<id>/instances and GET
// /runs/<id>/instances/<n>. Written by the master (master/runs_json.cc fills them, the /runs
// routes add what only they know) and read by the CLI (`corral run`, `runs`, `show`, `monit` and
// the JUnit report), from these structs on both sides. Reading is strict about types and lenient
// about presence, as in workers.h.
//
// Times are ISO 8601 strings in UTC, null on the wire until set; durations are in ms. Instance
// states are master/instance_table.h's names ("queued", "running", "passed", "failed",
// "errored", "cancelled"), a run's state one of "queued", "running", "quarantined", "finished",
// "cancelled". A field marked "absent when empty" is left out of the JSON when it is "".
// Pure, any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::api {

// A run's instances by state: "counts": {"queued": n, …} on the wire.
struct RunCounts {
  uint32_t queued = 0, running = 0, passed = 0, failed = 0, errored = 0, cancelled = 0;

  // The count of instances in `state`, or nullptr for a state this model does not know.
  uint32_t* of(std::string_view state);
  bool operator==(const RunCounts&) const = default;
};

// A row of GET /runs; the start of GET /runs/<id>.
struct RunSummary {
  std::string id;
  std::string scenario;  // the scenario's name
  std::string state;
  uint32_t instances = 0;
  std::optional<std::string> created_at, finished_at;
  RunCounts counts;
  bool operator==(const RunSummary&) const = default;
};

// How long the instances that ended took.
struct RunDuration {
  int64_t p50 = 0, p95 = 0, max = 0;
  bool operator==(const RunDuration&) const = default;
};

// Instances that failed at one step for one reason, the largest groups first.
struct RunFailure {
  uint32_t step = 0;
  std::string step_name;
  std::string reason;
  uint32_t count = 0;
  bool operator==(const RunFailure&) const = default;
};

// One of the scenario's own steps (not those inside a parallel step's branches).
struct RunStep {
  uint32_t step = 0;
  std::string name;
  bool operator==(const RunStep&) const = default;
};

// Why the dispatcher places none of a run's instances (master/runs.h, Run::quarantine).
struct RunQuarantine {
  std::string reason;
  uint64_t deaths = 0;  // worker deaths counted against it
  bool operator==(const RunQuarantine&) const = default;
};

// GET /runs/<id>.
struct RunDetail : RunSummary {
  RunDuration duration_ms;
  std::vector<RunFailure> failures;  // at most 20
  nlohmann::json vars;               // the run-time vars it was submitted with
  uint32_t priority = 1;
  std::vector<RunStep> steps;
  std::optional<RunQuarantine> quarantine;
  // A run over data rows: {"path", "format", "columns", "key"?, "rows", "skipped", "bad"}; null
  // (absent) for other runs.
  nlohmann::json data;
  // Why its waiting instances are not placed now, while some wait.
  std::optional<std::string> queued_reason;
  bool operator==(const RunDetail&) const = default;
};

// A call of a callback step's URL that the instance has not used yet.
struct InstanceCallback {
  uint32_t step = 0;
  bool called = false;
  bool operator==(const InstanceCallback&) const = default;
};

// Where one branch of the parallel step an instance is at stands.
struct BranchEntry {
  std::string name;
  std::string state;                     // "waiting", "running", "passed", "failed", "errored"
  std::optional<uint32_t> step;          // the step it is at, while running
  std::optional<std::string> step_name;  // ... and its name
  std::optional<std::string> reason;     // why it failed
  bool operator==(const BranchEntry&) const = default;
};

// One step an instance ended.
struct StepEntry {
  uint32_t step = 0;
  std::string name;
  std::string state;  // "passed", "failed", "errored"
  uint32_t attempts = 0;
  std::optional<std::string> started_at, ended_at;
  int64_t duration_ms = 0;
  int status = 0;                   // the last HTTP status, 0 when none
  std::string branch;               // its parallel step's branch; absent when empty
  std::optional<int64_t> until_ms;  // a poll step: how long until its condition held
  std::optional<double> tls_ms;     // TLS handshakes its requests waited for
  std::string reason;               // absent when empty
  std::string url;   // the final URL, when redirects were followed; absent when empty
  std::string body;  // the start of a failed step's response; absent when empty
  bool operator==(const StepEntry&) const = default;
};

// One instance of GET /runs/<id>/instances (with its steps when asked: ?steps=true), or GET
// /runs/<id>/instances/<n> (always with its steps).
struct InstanceEntry {
  uint32_t i = 0;  // its index in the run
  std::string state;
  uint32_t step = 0;   // the next step it runs (the one it is at)
  std::string reason;  // why it ended so, "" when it passed or has not ended
  uint32_t resumes = 0;
  std::vector<std::string> resume_reasons;
  std::optional<std::string> started_at, ended_at;
  int64_t duration_ms = 0;
  std::optional<int> worker;  // the slot that runs it
  std::optional<InstanceCallback> callback;
  std::optional<std::vector<BranchEntry>> branches;  // when it is at a parallel step
  nlohmann::json vars;  // the vars it captured, written with the steps only
  std::optional<std::vector<StepEntry>> steps;
  // A run over data rows: the instance's row and its key column's value, or why the row cannot
  // be read (absent when empty).
  std::optional<nlohmann::json> key, row;
  std::string row_error;
  // The trace id its requests carry in their traceparent (shared/trace_context.h), written with
  // the steps only; "" when the scenario sends none.
  std::string trace_id;
  bool operator==(const InstanceEntry&) const = default;
};

// GET /runs/<id>/instances.
struct InstancesAnswer {
  std::string run;
  std::vector<InstanceEntry> instances;
  std::optional<uint32_t> next;  // the index to ask from for more (?from=), none at the end
  bool operator==(const InstancesAnswer&) const = default;
};

// A row of a run's data file that did not parse: it does not run.
struct BadRow {
  uint64_t line = 0;
  std::string error;
  bool operator==(const BadRow&) const = default;
};

// What POST /runs made of a data file: rows to run, rows skipped, the first of those skipped.
struct DataRows {
  uint64_t rows = 0, skipped = 0;
  std::vector<BadRow> bad;
  bool operator==(const DataRows&) const = default;
};

// POST /runs, 201.
struct SubmitAnswer {
  std::string run;
  uint64_t instances = 0;
  std::optional<DataRows> data;  // a run over a data file's rows
  std::string warning;           // the run is not in the journal yet, and why; "" when it is
  bool operator==(const SubmitAnswer&) const = default;
};

// GET /runs: newest first.
struct RunsAnswer {
  std::vector<RunSummary> runs;
  bool operator==(const RunsAnswer&) const = default;
};

nlohmann::json to_json(const RunDuration& d);
nlohmann::json to_json(const RunFailure& f);
nlohmann::json to_json(const RunSummary& s);
nlohmann::json to_json(const RunDetail& d);
nlohmann::json to_json(const InstanceEntry& e);
nlohmann::json to_json(const InstancesAnswer& a);
nlohmann::json to_json(const RunsAnswer& a);
nlohmann::json to_json(const SubmitAnswer& a);

// GET /runs: {"runs": [...]}. An answer without its list (here and for the instances) is an
// error, not an empty list.
Result<RunsAnswer> runs_from_json(const nlohmann::json& answer);
// GET /runs/<id>.
Result<RunDetail> run_detail_from_json(const nlohmann::json& j);
// POST /runs, 201.
Result<SubmitAnswer> submit_answer_from_json(const nlohmann::json& j);
// GET /runs/<id>/instances: {"run", "instances": [...], "next"}.
Result<InstancesAnswer> instances_from_json(const nlohmann::json& answer);
// GET /runs/<id>/instances/<n>.
Result<InstanceEntry> instance_from_json(const nlohmann::json& j);

}  // namespace corral::api
