// The journal's SQL, shared by its two stores (master/journal/store.h): the subset that SQLite
// and PostgreSQL both accept (INSERT ... ON CONFLICT ... DO UPDATE, excluded.*, BIGINT, no
// AUTOINCREMENT or INSERT OR REPLACE), with `?` for each parameter (the PostgreSQL store numbers
// them $1, $2, ... when it prepares a statement). Integers are INTEGER or BIGINT, booleans 0 or 1,
// JSON values TEXT. The statements that write and read whole rows are made from the tables'
// columns (tables.h); the migrations (kMigrations) run in migrate.h's loop.
#pragma once

#include <cstdint>
#include <string>

#include "master/journal/columns_sql.h"
#include "master/journal/tables.h"

namespace corral::master::journal::sql {

// Each entry brings the schema from version i to i + 1. Append only: a released entry never
// changes, so any older file can be brought forward.
inline constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  seq BIGINT NOT NULL,
  scenario TEXT NOT NULL,
  vars TEXT NOT NULL,
  instances INTEGER NOT NULL,
  created_ms BIGINT NOT NULL,
  finished_ms BIGINT NOT NULL DEFAULT 0,
  cancelled INTEGER NOT NULL DEFAULT 0,
  summary TEXT NOT NULL DEFAULT '');
CREATE TABLE instances (
  run_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  state TEXT NOT NULL,
  next_step INTEGER NOT NULL DEFAULT 0,
  started_ms BIGINT NOT NULL DEFAULT 0,
  ended_ms BIGINT NOT NULL DEFAULT 0,
  reason TEXT NOT NULL DEFAULT '',
  resumes INTEGER NOT NULL DEFAULT 0,
  crash_resumes INTEGER NOT NULL DEFAULT 0,
  resume_reasons TEXT NOT NULL DEFAULT '[]',
  vars TEXT NOT NULL DEFAULT '{}',
  checkpoint TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, idx));
CREATE TABLE steps (
  run_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  step INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  started_ms BIGINT NOT NULL,
  ended_ms BIGINT NOT NULL,
  status INTEGER NOT NULL,
  until_ms BIGINT NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (run_id, idx, seq));
)sql",
    // 2: the final URL of a step whose request followed redirects.
    "ALTER TABLE steps ADD COLUMN url TEXT NOT NULL DEFAULT '';",
    // 3: a run's weight in the fair share between runs.
    "ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 1;",
    // 4: calls of callback steps' URLs.
    R"sql(
CREATE TABLE callbacks (
  run_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  step INTEGER NOT NULL,
  body TEXT NOT NULL,
  received_ms BIGINT NOT NULL,
  PRIMARY KEY (run_id, idx, step));
)sql",
    // 5: schedules, and the ticks they fired: the key (schedule, tick_ms) lets a tick fire once,
    // also when several hosts share one database.
    R"sql(
CREATE TABLE schedules (
  name TEXT PRIMARY KEY,
  cron TEXT NOT NULL,
  scenario TEXT NOT NULL,
  vars TEXT NOT NULL,
  instances INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  catch_up INTEGER NOT NULL,
  paused INTEGER NOT NULL,
  created_ms BIGINT NOT NULL,
  after_ms BIGINT NOT NULL);
CREATE TABLE schedule_fires (
  schedule TEXT NOT NULL,
  tick_ms BIGINT NOT NULL,
  run_id TEXT NOT NULL,
  fired_ms BIGINT NOT NULL,
  PRIMARY KEY (schedule, tick_ms));
)sql",
    // 6: the data rows a run's instances read (shared/data/rows.h), as JSON; '' for none.
    "ALTER TABLE runs ADD COLUMN data TEXT NOT NULL DEFAULT '';",
    // 7: the hosts sharing a PostgreSQL journal (master/cluster/hosts.h); unused on SQLite.
    // heartbeat_ms is the database's clock.
    R"sql(
CREATE TABLE hosts (
  id TEXT PRIMARY KEY,
  address TEXT NOT NULL,
  started_ms BIGINT NOT NULL,
  heartbeat_ms BIGINT NOT NULL,
  epoch BIGINT NOT NULL,
  capacity BIGINT NOT NULL,
  held BIGINT NOT NULL);
)sql",
    // 8: the ranges of runs' instances that hosts sharing a PostgreSQL journal claim
    // (master/cluster/hosts.h); unused on SQLite. host is '' while no host holds the range;
    // fenced_ms is when another host declared the host dead (0: it was not).
    R"sql(
CREATE TABLE claims (
  run_id TEXT NOT NULL,
  lo INTEGER NOT NULL,
  hi INTEGER NOT NULL,
  seq BIGINT NOT NULL,
  host TEXT NOT NULL DEFAULT '',
  done INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, lo));
CREATE INDEX claims_by_host ON claims (host, done, seq, lo);
ALTER TABLE hosts ADD COLUMN fenced_ms BIGINT NOT NULL DEFAULT 0;
)sql",
    // 9: a claim carries the epoch its host made it at; the epoch is a key column of hosts
    // (a unique index with it), so that writing a heartbeat does not wait for the row's
    // FOR KEY SHARE locks, and bumping the epoch does.
    R"sql(
ALTER TABLE claims ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX hosts_epoch ON hosts (id, epoch);
)sql",
    // 10: load tests spread over the hosts sharing a PostgreSQL journal
    // (master/cluster/load_shares.h); unused on SQLite. A test as its origin host submitted it,
    // each host's share of it (state: '' until the host starts it, then running, done, or why it
    // could not run), and the seconds each share measured, kept until the test ends.
    R"sql(
CREATE TABLE loads (
  id TEXT PRIMARY KEY,
  origin TEXT NOT NULL,
  body TEXT NOT NULL,
  start_ms BIGINT NOT NULL,
  hosts INTEGER NOT NULL,
  stop_ms BIGINT NOT NULL DEFAULT 0,
  created_ms BIGINT NOT NULL);
CREATE TABLE load_shares (
  load_id TEXT NOT NULL,
  host TEXT NOT NULL,
  idx INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (load_id, host));
CREATE INDEX load_shares_by_host ON load_shares (host, state);
CREATE TABLE load_seconds (
  load_id TEXT NOT NULL,
  host TEXT NOT NULL,
  seq BIGINT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (load_id, host, seq));
)sql",
    // 11: why a run is quarantined (master/runs.h): '' when it is not.
    "ALTER TABLE runs ADD COLUMN quarantine TEXT NOT NULL DEFAULT '';",
    // 12: the time a step's requests waited for TLS handshakes.
    "ALTER TABLE steps ADD COLUMN tls_us BIGINT NOT NULL DEFAULT 0;",
    // 13: the start of the response of a step that failed on one (ipc::kBodyExcerptBytes).
    "ALTER TABLE steps ADD COLUMN body TEXT NOT NULL DEFAULT '';",
    // 14: load tests that ended (master/kept_loads.h), listed at start-up by host and age.
    R"sql(
CREATE TABLE load_tests (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  ended_ms BIGINT NOT NULL,
  summary TEXT NOT NULL,
  detail TEXT NOT NULL);
CREATE INDEX load_tests_by_host ON load_tests (host, created_ms);
)sql",
    // 15: the age of its heartbeat at which a host may be declared dead, written with each
    // heartbeat: shorter while it holds instances, as it then renews more often
    // (master/cluster/hosts.h).
    "ALTER TABLE hosts ADD COLUMN dead_after_ms BIGINT NOT NULL DEFAULT 5000;",
};

// The statements that write and read whole rows, made from the tables' columns (tables.h).
inline const std::string kPutRun = upsert(tables::kRuns);
inline const std::string kPutInstance = upsert(tables::kInstances);
// PostgreSQL only: many instance rows at once (PgStore::put_instances).
inline const std::string kPutInstances = upsert_many(tables::kInstances);
inline const std::string kPutStep = upsert(tables::kSteps);
inline const std::string kPutCallback = upsert(tables::kCallbacks);
inline const std::string kPutSchedule = upsert(tables::kSchedules);
// A tick's fire, while its schedule is there: parameters the row's, then the schedule's name.
inline const std::string kPutFire =
    upsert_if(tables::kFires, "EXISTS (SELECT 1 FROM schedules WHERE name = ?)");
inline const std::string kRunRows = "SELECT " + select_list(tables::kRuns) + " FROM runs";
inline const std::string kInstanceRows = "SELECT " + select_list(tables::kInstances) +
                                         " FROM instances WHERE run_id = ? AND idx >= ? AND "
                                         "idx < ? ORDER BY idx";
inline const std::string kStepRows = "SELECT " + select_list(tables::kSteps) +
                                     " FROM steps WHERE run_id = ? AND idx >= ? AND idx < ? "
                                     "ORDER BY idx, seq";
inline const std::string kCallbackRows = "SELECT " + select_list(tables::kCallbacks) +
                                         " FROM callbacks WHERE run_id = ? AND idx >= ? AND "
                                         "idx < ? ORDER BY idx, step";
// Each schedule with its newest fire, `f`. The two tables have no column name in common.
inline const std::string kScheduleRows = "SELECT " + select_list(tables::kSchedules) + R"sql(
FROM schedules s LEFT JOIN schedule_fires f ON f.schedule = s.name
  AND f.tick_ms = (SELECT MAX(tick_ms) FROM schedule_fires WHERE schedule = s.name)
ORDER BY s.name)sql";
// Kept load tests: a host's, oldest first, without their detail; one test's detail.
inline const std::string kLoadTestRows = "SELECT " + select_list(tables::kLoadTestSummaries) +
                                         " FROM load_tests WHERE host = ? ORDER BY created_ms, id";
inline const std::string kPutLoadTest = upsert(tables::kLoadTests);
inline constexpr const char* kLoadTestDetail = "SELECT detail FROM load_tests WHERE id = ?";
inline constexpr const char* kDeleteLoadTest = "DELETE FROM load_tests WHERE id = ?";

inline constexpr const char* kNextSeq = "SELECT value FROM meta WHERE name = ?";
inline constexpr const char* kBumpSeq = R"sql(
INSERT INTO meta (name, value) VALUES (?, ?)
ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE meta.value < excluded.value)sql";
inline constexpr const char* kMarkRunning = R"sql(
INSERT INTO instances (run_id, idx, state, started_ms) VALUES (?, ?, 'running', ?)
ON CONFLICT (run_id, idx) DO UPDATE SET state = 'running', checkpoint = '')sql";
inline constexpr const char* kMarkResumed = R"sql(
INSERT INTO instances (run_id, idx, state, resumes, resume_reasons) VALUES (?, ?, 'running', ?, ?)
ON CONFLICT (run_id, idx) DO UPDATE SET state = 'running', resumes = excluded.resumes,
  resume_reasons = excluded.resume_reasons)sql";
// PostgreSQL only: kMarkResumed for many instances, parameters the run, then the instances'
// indexes, resumes and resume reasons as arrays (each index once).
inline constexpr const char* kMarkResumedMany = R"sql(
INSERT INTO instances (run_id, idx, state, resumes, resume_reasons)
SELECT CAST(? AS TEXT), i, 'running', r, rr
FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[])) AS u(i, r, rr)
ON CONFLICT (run_id, idx) DO UPDATE SET state = 'running', resumes = excluded.resumes,
  resume_reasons = excluded.resume_reasons)sql";
// PostgreSQL only: kMarkRunning for many instances, parameters the run, the start and the
// instances' indexes as an array (each index once).
inline constexpr const char* kMarkRunningMany = R"sql(
INSERT INTO instances (run_id, idx, state, started_ms)
SELECT CAST(? AS TEXT), i, 'running', CAST(? AS BIGINT) FROM unnest(CAST(? AS BIGINT[])) AS i
ON CONFLICT (run_id, idx) DO UPDATE SET state = 'running', checkpoint = '')sql";
inline constexpr const char* kSetQuarantine = "UPDATE runs SET quarantine = ? WHERE id = ?";
inline constexpr const char* kFinishRun =
    "UPDATE runs SET finished_ms = ?, cancelled = ?, summary = ? WHERE id = ?";
inline constexpr const char* kCancelOpen =
    "UPDATE instances SET state = 'cancelled', ended_ms = ? "
    "WHERE run_id = ? AND state IN ('queued', 'running')";
inline constexpr const char* kDeleteCallbacks = "DELETE FROM callbacks WHERE run_id = ?";
inline constexpr const char* kDeleteSteps = "DELETE FROM steps WHERE run_id = ?";
inline constexpr const char* kDeleteInstances = "DELETE FROM instances WHERE run_id = ?";
inline constexpr const char* kDeleteRun = "DELETE FROM runs WHERE id = ?";
inline constexpr const char* kSetSchedule =
    "UPDATE schedules SET paused = ?, after_ms = ? WHERE name = ?";
inline constexpr const char* kDeleteFires = "DELETE FROM schedule_fires WHERE schedule = ?";
inline constexpr const char* kDeleteSchedule = "DELETE FROM schedules WHERE name = ?";
inline constexpr const char* kFireRun =
    "SELECT run_id FROM schedule_fires WHERE schedule = ? AND tick_ms = ?";
inline constexpr const char* kFireAdvance =
    "UPDATE schedules SET after_ms = ? WHERE name = ? AND after_ms < ?";
inline constexpr const char* kPruneFires = R"sql(
DELETE FROM schedule_fires WHERE schedule = ? AND tick_ms < (
  SELECT tick_ms FROM schedule_fires WHERE schedule = ?
  ORDER BY tick_ms DESC LIMIT 1 OFFSET 99))sql";

// PostgreSQL only: the claims of hosts sharing the journal (docs/cluster.md).
// A new run's instances, in ranges of kClaimRange, none held yet. Parameters: id, instances,
// seq, instances.
inline constexpr const char* kPutClaims = R"sql(
INSERT INTO claims (run_id, lo, hi, seq)
SELECT CAST(? AS TEXT), g, LEAST(g + 100, CAST(? AS BIGINT)), CAST(? AS BIGINT)
FROM generate_series(0, CAST(? AS BIGINT) - 1, 100) AS g
ON CONFLICT (run_id, lo) DO NOTHING)sql";
inline constexpr uint32_t kClaimRange = 100;  // the range kPutClaims makes
inline constexpr const char* kDeleteClaims = "DELETE FROM claims WHERE run_id = ?";
// A run that ended: its ranges are done (those still open were cancelled with it).
inline constexpr const char* kCloseClaims =
    "UPDATE claims SET done = 1 WHERE run_id = ? AND done = 0";
inline constexpr const char* kFence =
    "SELECT 1 FROM hosts WHERE id = ? AND epoch = ? FOR KEY SHARE";
inline constexpr const char* kClaimDone =
    "UPDATE claims SET done = 1 WHERE run_id = ? AND lo = ? AND host = ? AND epoch = ?";
inline constexpr const char* kLeave = R"sql(
WITH me AS (
  UPDATE hosts SET epoch = epoch + 1, heartbeat_ms = 0,
    fenced_ms = CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)
  WHERE id = ? AND epoch = ? RETURNING id, epoch)
UPDATE claims SET host = '' WHERE host = (SELECT id FROM me) AND epoch < (SELECT epoch FROM me))sql";
inline constexpr const char* kRunOpenRange =
    "SELECT 1 FROM claims WHERE run_id = ? AND done = 0 LIMIT 1";
// Store::tally_run. A percentile's rank is round(p * (n - 1)) on the sorted durations, in
// integers, as runs_json.cc's percentile() picks it.
inline constexpr const char* kTallyStates =
    "SELECT state, COUNT(*) FROM instances WHERE run_id = ? GROUP BY state";
inline constexpr const char* kTallyDurations = R"sql(
WITH d AS (
  SELECT CASE WHEN started_ms > 0 AND ended_ms >= started_ms THEN ended_ms - started_ms
         ELSE 0 END AS ms
  FROM instances WHERE run_id = ? AND state NOT IN ('queued', 'running', 'cancelled')),
r AS (SELECT ms, ROW_NUMBER() OVER (ORDER BY ms) - 1 AS k, COUNT(*) OVER () AS n FROM d)
SELECT COALESCE(MAX(CASE WHEN k = (50 * (n - 1) + 50) / 100 THEN ms END), 0),
       COALESCE(MAX(CASE WHEN k = (95 * (n - 1) + 50) / 100 THEN ms END), 0),
       COALESCE(MAX(ms), 0)
FROM r)sql";
inline constexpr const char* kTallyFailures = R"sql(
SELECT next_step, reason, COUNT(*) FROM instances
WHERE run_id = ? AND state NOT IN ('queued', 'running', 'cancelled', 'passed')
GROUP BY next_step, reason ORDER BY COUNT(*) DESC, next_step, reason LIMIT 20)sql";

}  // namespace corral::master::journal::sql
