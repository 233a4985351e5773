// The schedules part: the table of schedules (schedules.h), the timer that fires their ticks,
// and the /schedules routes. A tick's run is submitted through RunService, as POST /runs is.
//   schedule_service.cc  the timer and the ticks
//   api_schedules.cc     POST/GET /schedules, DELETE /schedules/<name>, pause, resume
// Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "master/api_route.h"
#include "master/run_service.h"
#include "master/schedules.h"
#include "master/worker_link.h"
#include "shared/uv/timer.h"

namespace corral::master {

class ScheduleService {
 public:
  ScheduleService(uv_loop_t* loop, RunService& runs, WorkerLink& workers)
      : loop_(loop), runs_(runs), workers_(workers) {}

  // Before start(), from the journal's rows (journal may be null): the table, and the ticks that
  // catch_up fires at start.
  void restore(journal::Journal* journal, const std::vector<journal::ScheduleRow>& rows,
               int64_t now_ms);
  // Fires the caught-up ticks, then arms the timer for the next tick of any schedule.
  void start();
  // The daemon is finishing: no tick fires any more.
  void stop() { timer_.reset(); }
  const Schedules& table() const { return table_; }

  // The routes, and their table (api_schedules.cc).
  static const std::vector<ApiRoute>& routes();
  void api_add(const ApiCall& c);
  void api_list(const ApiCall& c);
  void api_remove(const ApiCall& c);
  void api_pause(const ApiCall& c);
  void api_resume(const ApiCall& c);

 private:
  // Arms the timer for the next tick of any schedule (again after each change).
  void arm();
  void fire_due();
  void fire(const ScheduleTick& tick);

  uv_loop_t* loop_;
  RunService& runs_;
  WorkerLink& workers_;
  journal::Journal* journal_ = nullptr;
  Schedules table_;
  std::vector<ScheduleTick> catch_up_;  // from the journal, fired by start()
  std::unique_ptr<uv::Timer> timer_;
};

}  // namespace corral::master
