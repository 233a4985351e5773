// Schedules: a run submitted at each tick of a cron expression (docs/schedules.md). This table
// holds the schedules, says which ticks are due at a given time, and hands every change to the
// journal, from which restore() rebuilds it at start. Time is passed in (Unix ms; cron reads it
// in UTC): the timer of ScheduleService (schedule_service.cc) calls due() when the next tick comes,
// and tests call it with a clock of their own.
//
// Each tick fires at most once, across restarts; with catch_up, a tick that a crash cut short
// fires at the next start, so exactly once. A schedule keeps `after_ms`: its ticks strictly after
// that time are still to come. due() moves it to the tick that fires, in memory only. The
// journal learns of the fire from fire_write(), which the daemon runs inside the same journal
// write as the run's own row (Runs::create's `with_run`), so that one transaction holds both
// or neither:
//  - the daemon dies before that transaction commits: neither is in the journal, and none of the
//    run's instances had started (the daemon places them only once it has committed:
//    RunService::submit), so at the next start the tick counts as missed (below): it never fires
//    twice;
//  - it dies after: both are there, and after_ms is past the tick, which never fires again.
// Besides, the fire's key (schedule, tick) is unique in the journal: a second run for one tick is
// refused there, and set aside with that run (the backstop for several hosts on one database).
//
// Missed ticks. At start, a schedule whose next tick has passed missed ticks while the daemon
// was down: with catch_up it fires once, for the last of them, however many there were; without
// it they are skipped and logged, and after_ms moves past them. While the daemon runs, a timer
// that comes late (a clock set forward, a suspended host) fires the last passed tick once.
// A paused schedule fires nothing; resume() starts it again from the time of the resume.
//
// Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/cron.h"
#include "config/scenario/model.h"
#include "master/journal/journal.h"

namespace corral::master {

// One tick of one schedule.
struct ScheduleTick {
  std::string name;
  int64_t tick_ms = 0;
};

struct Schedule {
  std::string name;
  config::Cron cron;
  std::shared_ptr<const scenario::Scenario> scenario;
  nlohmann::json vars = nlohmann::json::object();  // run-time vars of each run
  uint32_t instances = 1;
  uint32_t priority = 1;
  bool catch_up = false;
  bool paused = false;
  int64_t created_ms = 0;
  int64_t after_ms = 0;       // its ticks strictly after this are still to come
  int64_t next_ms = 0;        // its next tick; 0 while paused
  int64_t last_tick_ms = 0;   // the last tick that fired a run; 0: none yet
  int64_t last_fired_ms = 0;  // when that run was created
  std::string last_run;
};

// Names go into URL paths: 1 to 64 letters, digits, '.', '_' and '-', not starting with '.'.
// Fails with "name: ..." otherwise.
Status check_schedule_name(const std::string& name);

// The journal write that records `tick` as fired by run `run_id` at `fired_ms`, to run in the
// same write as the run's row (Runs::create's `with_run`).
std::function<Status(journal::Store&, const std::string& run_id)> fire_write(ScheduleTick tick,
                                                                             int64_t fired_ms);

class Schedules {
 public:
  // `journal` may be null (nothing is kept across restarts); it must outlive this table.
  explicit Schedules(journal::Journal* journal = nullptr) : journal_(journal) {}
  void attach(journal::Journal* journal) { journal_ = journal; }

  // At start, before any other call: the schedules in the journal's rows (a row that no longer
  // parses is left out, and logged). Then the ticks missed while the daemon was down, as above:
  // returns the ticks that catch_up fires now; the others are skipped.
  std::vector<ScheduleTick> restore(const std::vector<journal::ScheduleRow>& rows, int64_t now_ms);

  // Adds `s`, starting at `now_ms`: its created_ms and after_ms become now_ms. Fails with
  // kAlreadyExists when the name is taken.
  Status add(Schedule s, int64_t now_ms);
  // Fails with kNotFound when there is no such schedule.
  Status remove(const std::string& name);
  // Pausing a paused schedule, or resuming one that is not, changes nothing. Resuming starts
  // its ticks from `now_ms`. Fail with kNotFound.
  Result<const Schedule*> pause(const std::string& name);
  Result<const Schedule*> resume(const std::string& name, int64_t now_ms);

  const Schedule* find(const std::string& name) const;
  // By name.
  const std::map<std::string, Schedule>& all() const { return schedules_; }

  // The ticks due at `now_ms`, at most one per schedule (its last tick at or before now); each
  // schedule's after_ms moves to the tick returned.
  std::vector<ScheduleTick> due(int64_t now_ms);
  // The earliest next tick of any schedule not paused; nullopt when there is none.
  std::optional<int64_t> next_due() const;

  // The run for `tick` was created as `run_id`: the schedule's last fire (if it is still there).
  void fired(const ScheduleTick& tick, const std::string& run_id, int64_t fired_ms);
  // The run for `tick` was refused (`why`: the queue is full): the tick is skipped for good, in
  // the journal too, and logged.
  void skipped(const ScheduleTick& tick, const std::string& why);

  // What the API shows of a schedule.
  nlohmann::json to_json(const Schedule& s) const;

 private:
  void set_next(Schedule& s);
  // after_ms and paused into the journal.
  void journal_state(const Schedule& s);
  void journal_write(std::function<Status(journal::Store&)> op);

  journal::Journal* journal_;
  std::map<std::string, Schedule> schedules_;
};

// Conversions between the table and the journal's rows.
journal::ScheduleRow schedule_row(const Schedule& s);
// Fails with the reason when the row does not parse (cron, scenario or vars).
Result<Schedule> schedule_from_row(const journal::ScheduleRow& row);

}  // namespace corral::master
