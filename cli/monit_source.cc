#include "cli/monit_source.h"

#include <unistd.h>

#include <set>

#include "cli/log_tail.h"
#include "cli/status_view.h"
#include "cli/workers.h"
#include "shared/log_files.h"
#include "shared/proc.h"

namespace corral::cli {
namespace {

bool has_failures(const api::RunSummary& run) {
  return uint64_t{run.counts.failed} + run.counts.errored > 0;
}

}  // namespace

MonitSource::MonitSource(const Context& ctx, long timeout_ms)
    : api_(ctx, timeout_ms),
      same_host_(ctx.api_address.empty()),
      logs_dir_(ctx.logs_dir()),
      cpu_(::sysconf(_SC_CLK_TCK)) {}

void MonitSource::refresh(MonitSnapshot& snapshot, WorkerHistory& history, size_t log_lines) {
  snapshot.now = WallClock::now();
  snapshot.logs_dir = logs_dir_;
  snapshot.log_lines = read_logs(log_lines);
  const Status asked = ask(snapshot);
  if (!asked) {
    snapshot.problem = daemon_unreachable(asked) ? "daemon not answering on " + where()
                                                 : "daemon answering with errors on " + where();
    snapshot.problem_detail = asked.message();
    return;
  }
  snapshot.problem.clear();
  snapshot.problem_detail.clear();
  snapshot.answered_at = snapshot.now;
  sample(snapshot.workers, history);
}

Status MonitSource::ask(MonitSnapshot& snapshot) const {
  auto health = get_health(api_);
  if (!health) return health.status();
  auto workers = get_workers(api_);
  if (!workers) return workers.status();
  auto runs = get_answer(api_, "/runs", &api::runs_from_json);
  if (!runs) return runs.status();
  std::map<std::string, std::vector<api::RunFailure>> failures;
  for (const api::RunSummary& run : runs_to_show(runs->runs)) {
    if (!has_failures(run)) continue;
    auto detail = get_answer(api_, "/runs/" + run.id, &api::run_detail_from_json);
    if (detail) {
      failures[run.id] = std::move(detail->failures);
    } else if (daemon_unreachable(detail.status())) {
      return detail.status();
    }  // else the run was pruned meanwhile: no failures to show
  }
  snapshot.health = std::move(*health);
  snapshot.workers = std::move(workers->workers);
  snapshot.runs = std::move(runs->runs);
  snapshot.failures = std::move(failures);
  return Status::ok();
}

void MonitSource::sample(const std::vector<api::WorkerEntry>& workers, WorkerHistory& history) {
  const auto now = CpuMeter::Clock::now();
  std::set<long> pids;
  std::set<long> slots;
  for (const api::WorkerEntry& w : workers) {
    const long slot = w.slot;
    const auto pid = static_cast<long>(w.pid);
    std::optional<double> cpu;
    if (same_host_ && pid > 0) {
      std::optional<ProcStat> stat = proc_stat(static_cast<pid_t>(pid));
      cpu = cpu_.update(pid, stat ? std::optional<uint64_t>(stat->cpu_ticks) : std::nullopt, now);
      pids.insert(pid);
    }
    history.add(slot, sample_of(w, cpu));
    slots.insert(slot);
  }
  cpu_.keep_only(pids);
  history.keep_only(slots);
}

std::vector<std::string> MonitSource::read_logs(size_t n) const {
  std::vector<std::vector<std::string>> tails;
  for (const LogFile& f : current_log_files(logs_dir_)) {
    auto lines = tail_lines(f.path, n);
    if (lines) tails.push_back(std::move(*lines));  // a file mid-rotation shows next time
  }
  return merge_log_tails(tails, n);
}

}  // namespace corral::cli
