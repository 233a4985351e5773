// What the journal keeps, as plain rows: one per run, one per instance that was ever
// dispatched, one per finished step of an instance (never one per poll). JSON values (a
// scenario, variables, a checkpoint) travel as their JSON text. Times are Unix milliseconds.
// Each table's columns, and which field holds each, are in tables.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace corral::master::journal {

struct RunRow {
  std::string id;
  uint64_t seq = 0;      // the run's number; run ids never repeat across restarts
  std::string scenario;  // the scenario's JSON source
  std::string vars;      // run-time vars (JSON object)
  uint32_t instances = 0;
  int64_t created_ms = 0;
  int64_t finished_ms = 0;  // 0 while the run has unfinished instances
  bool cancelled = false;
  std::string summary;  // a finished run's counts, durations and failures (JSON)
  uint32_t priority = 1;  // its weight in the dispatcher's fair share, 1 to 100
  std::string data;       // the data rows its instances read (JSON, Run::data); "" for none
  std::string quarantine;  // why it is quarantined (Run::quarantine); "" when it is not

  bool operator==(const RunRow&) const = default;
};

// An instance without a row has never been dispatched: it is queued at step 0 (or cancelled,
// when its run was cancelled).
struct InstanceRow {
  std::string run_id;
  uint32_t idx = 0;
  std::string state;  // queued, running, passed, failed, errored, cancelled
  uint32_t next_step = 0;
  int64_t started_ms = 0, ended_ms = 0;
  std::string reason;
  uint32_t resumes = 0, crash_resumes = 0;
  std::string resume_reasons = "[]";  // JSON array of strings
  std::string vars = "{}";            // captured variables (JSON object)
  std::string checkpoint;             // a handed-back checkpoint (JSON), empty when none

  bool operator==(const InstanceRow&) const = default;
};

struct StepRow {
  std::string run_id;
  uint32_t idx = 0;
  uint32_t seq = 0;  // position in the instance's history
  uint32_t step = 0;
  std::string state;
  uint32_t attempts = 0;
  int64_t started_ms = 0, ended_ms = 0;
  int status = 0;
  int64_t until_ms = -1;
  std::string reason;
  std::string url;  // the final URL, when redirects were followed
  int64_t tls_us = 0;  // TLS handshakes its requests waited for
  std::string body;    // the start of the response of a step that failed on one

  bool operator==(const StepRow&) const = default;
};

// A call of a callback step's URL (steps/callback), kept until its run is deleted: the
// instance uses it when it reaches the step, on whichever worker, after any restart.
struct CallbackRow {
  std::string run_id;
  uint32_t idx = 0;
  uint32_t step = 0;
  std::string body;  // the caller's JSON
  int64_t received_ms = 0;

  bool operator==(const CallbackRow&) const = default;
};

// A schedule (docs/schedules.md): a run submitted at each tick of a cron expression.
struct ScheduleRow {
  std::string name;
  std::string cron;      // the five fields
  std::string scenario;  // the scenario's JSON source
  std::string vars;      // run-time vars (JSON object)
  uint32_t instances = 1;
  uint32_t priority = 1;
  bool catch_up = false;  // a tick missed while the daemon was down fires once at start
  bool paused = false;
  int64_t created_ms = 0;
  int64_t after_ms = 0;  // its ticks strictly after this time are still to come
  // From its newest fire, when it has one (read by schedules(); put_schedule ignores them).
  int64_t last_tick_ms = 0;
  int64_t last_fired_ms = 0;
  std::string last_run;

  bool operator==(const ScheduleRow&) const = default;
};

// One tick of a schedule that fired: the run it submitted. (schedule, tick_ms) is unique.
struct FireRow {
  std::string schedule;
  int64_t tick_ms = 0;
  std::string run_id;
  int64_t fired_ms = 0;

  bool operator==(const FireRow&) const = default;
};

// A load test that ended (master/kept_loads.h), kept until retention forgets it: its summary,
// read at start-up to list it, and its detail, read when the test itself is asked for.
struct LoadTestRow {
  std::string id;
  std::string host;  // the host that ran it, on a PostgreSQL journal hosts share; "" on SQLite
  int64_t created_ms = 0;
  int64_t ended_ms = 0;
  std::string summary;  // GET /loads/<id> without its series (JSON)
  std::string detail;   // its series, the target's samples and its merged histograms (encoded)

  bool operator==(const LoadTestRow&) const = default;
};

// A run's end as the database sums it up (Store::tally_run), for a run whose rows several
// hosts wrote: its instances' rows by state; the durations of those that ended (cancelled aside)
// at the ranks runs_json.cc's percentile() picks; its most common failures.
struct RunTally {
  std::map<std::string, uint64_t> states;  // rows by state
  int64_t p50_ms = 0, p95_ms = 0, max_ms = 0;
  struct Failure {
    uint32_t step = 0;
    std::string reason;
    uint64_t count = 0;
  };
  std::vector<Failure> failures;  // most first, then by step and reason; at most 20
};

// One run with everything the journal holds about it.
struct StoredRun {
  RunRow run;
  std::vector<InstanceRow> instances;  // by idx
  std::vector<StepRow> steps;          // by idx, then seq
  std::vector<CallbackRow> callbacks;  // by idx, then step
};

}  // namespace corral::master::journal
