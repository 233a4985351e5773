// Each journal table's columns (columns.h): the one place that pairs a column with the field of
// its row (rows.h). A column has its field's name. Adding a column to a table is its migration
// (sql.h), its field, and one line here; both stores then write and read it.
#pragma once

#include <cstdint>
#include <iterator>
#include <span>

#include "master/journal/columns.h"
#include "master/journal/rows.h"

namespace corral::master::journal::tables {

// The column of `Row` named as its `field`, then what Column takes after the field: its Write
// (kOnce when left out), its Range, and where a query reads it from.
#define CORRAL_COLUMN(Row, field, ...) \
  Column<Row> { #field, &Row::field, __VA_ARGS__ }

// A column a line:
// clang-format off

inline constexpr Column<RunRow> kRunColumns[] = {
    CORRAL_COLUMN(RunRow, id, Write::kKey),
    CORRAL_COLUMN(RunRow, seq),
    CORRAL_COLUMN(RunRow, scenario),
    CORRAL_COLUMN(RunRow, vars),
    CORRAL_COLUMN(RunRow, instances),
    CORRAL_COLUMN(RunRow, created_ms),
    CORRAL_COLUMN(RunRow, finished_ms, Write::kAlways),
    CORRAL_COLUMN(RunRow, cancelled, Write::kAlways),
    CORRAL_COLUMN(RunRow, summary, Write::kAlways),
    CORRAL_COLUMN(RunRow, priority, Write::kOnce, {1, 100}),
    CORRAL_COLUMN(RunRow, data),
    CORRAL_COLUMN(RunRow, quarantine, Write::kNever),  // Store::set_quarantine
};
inline constexpr Table<RunRow> kRuns{"runs", kRunColumns};

inline constexpr Column<InstanceRow> kInstanceColumns[] = {
    CORRAL_COLUMN(InstanceRow, run_id, Write::kKey),
    CORRAL_COLUMN(InstanceRow, idx, Write::kKey),
    CORRAL_COLUMN(InstanceRow, state, Write::kAlways),
    CORRAL_COLUMN(InstanceRow, next_step, Write::kAlways),
    CORRAL_COLUMN(InstanceRow, started_ms, Write::kAlways),
    CORRAL_COLUMN(InstanceRow, ended_ms, Write::kAlways),
    CORRAL_COLUMN(InstanceRow, reason, Write::kAlways),
    CORRAL_COLUMN(InstanceRow, resumes, Write::kAlways),
    CORRAL_COLUMN(InstanceRow, crash_resumes, Write::kAlways),
    CORRAL_COLUMN(InstanceRow, resume_reasons, Write::kAlways),
    CORRAL_COLUMN(InstanceRow, vars, Write::kAlways),
    CORRAL_COLUMN(InstanceRow, checkpoint, Write::kAlways),
};
inline constexpr Table<InstanceRow> kInstances{"instances", kInstanceColumns};

// A step is written once: the same step again changes nothing.
inline constexpr Column<StepRow> kStepColumns[] = {
    CORRAL_COLUMN(StepRow, run_id, Write::kKey),
    CORRAL_COLUMN(StepRow, idx, Write::kKey),
    CORRAL_COLUMN(StepRow, seq, Write::kKey),
    CORRAL_COLUMN(StepRow, step),
    CORRAL_COLUMN(StepRow, state),
    CORRAL_COLUMN(StepRow, attempts),
    CORRAL_COLUMN(StepRow, started_ms),
    CORRAL_COLUMN(StepRow, ended_ms),
    CORRAL_COLUMN(StepRow, status),
    CORRAL_COLUMN(StepRow, until_ms),
    CORRAL_COLUMN(StepRow, reason),
    CORRAL_COLUMN(StepRow, url),
    CORRAL_COLUMN(StepRow, tls_us),
    CORRAL_COLUMN(StepRow, body),
};
inline constexpr Table<StepRow> kSteps{"steps", kStepColumns};

// The first call of a step is the one kept.
inline constexpr Column<CallbackRow> kCallbackColumns[] = {
    CORRAL_COLUMN(CallbackRow, run_id, Write::kKey),
    CORRAL_COLUMN(CallbackRow, idx, Write::kKey),
    CORRAL_COLUMN(CallbackRow, step, Write::kKey),
    CORRAL_COLUMN(CallbackRow, body),
    CORRAL_COLUMN(CallbackRow, received_ms),
};
inline constexpr Table<CallbackRow> kCallbacks{"callbacks", kCallbackColumns};

// A schedule's last_* come from its newest fire, `f` in sql::kScheduleRows.
inline constexpr Column<ScheduleRow> kScheduleColumns[] = {
    CORRAL_COLUMN(ScheduleRow, name, Write::kKey),
    CORRAL_COLUMN(ScheduleRow, cron, Write::kAlways),
    CORRAL_COLUMN(ScheduleRow, scenario, Write::kAlways),
    CORRAL_COLUMN(ScheduleRow, vars, Write::kAlways),
    CORRAL_COLUMN(ScheduleRow, instances, Write::kAlways, {0, UINT32_MAX}),
    CORRAL_COLUMN(ScheduleRow, priority, Write::kAlways, {1, 100}),
    CORRAL_COLUMN(ScheduleRow, catch_up, Write::kAlways),
    CORRAL_COLUMN(ScheduleRow, paused, Write::kAlways),
    CORRAL_COLUMN(ScheduleRow, created_ms, Write::kAlways),
    CORRAL_COLUMN(ScheduleRow, after_ms, Write::kAlways),
    CORRAL_COLUMN(ScheduleRow, last_tick_ms, Write::kNever, {}, "f.tick_ms"),
    CORRAL_COLUMN(ScheduleRow, last_fired_ms, Write::kNever, {}, "f.fired_ms"),
    CORRAL_COLUMN(ScheduleRow, last_run, Write::kNever, {}, "f.run_id"),
};
inline constexpr Table<ScheduleRow> kSchedules{"schedules", kScheduleColumns};

// A tick fires once: the same fire again changes nothing.
inline constexpr Column<FireRow> kFireColumns[] = {
    CORRAL_COLUMN(FireRow, schedule, Write::kKey),
    CORRAL_COLUMN(FireRow, tick_ms, Write::kKey),
    CORRAL_COLUMN(FireRow, run_id),
    CORRAL_COLUMN(FireRow, fired_ms),
};
inline constexpr Table<FireRow> kFires{"schedule_fires", kFireColumns};

// A kept load test is written once (its id is new), and read in two ways: without its detail
// to list it, and whole.
inline constexpr Column<LoadTestRow> kLoadTestColumns[] = {
    CORRAL_COLUMN(LoadTestRow, id, Write::kKey),
    CORRAL_COLUMN(LoadTestRow, host),
    CORRAL_COLUMN(LoadTestRow, created_ms),
    CORRAL_COLUMN(LoadTestRow, ended_ms),
    CORRAL_COLUMN(LoadTestRow, summary),
    CORRAL_COLUMN(LoadTestRow, detail),
};
inline constexpr Table<LoadTestRow> kLoadTests{"load_tests", kLoadTestColumns};
inline constexpr Table<LoadTestRow> kLoadTestSummaries{
    "load_tests", std::span(kLoadTestColumns).first(std::size(kLoadTestColumns) - 1)};

// clang-format on

#undef CORRAL_COLUMN

}  // namespace corral::master::journal::tables
