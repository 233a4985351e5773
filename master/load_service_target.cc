// The target a load test starts (a load section's "target", master/target_process.h): it
// starts before the test, which runs once it is ready; its end while the test runs ends the
// test, and the test's end stops it (LoadService::on_target_sample).
#include <spdlog/spdlog.h>

#include "master/load_service.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

// The last lines a refusal quotes.
constexpr size_t kQuotedLines = 10;

// "; its last lines:\n  stderr| ...", or "" when it wrote none.
std::string last_lines(const TargetProcess& p) {
  const auto& lines = p.lines();
  if (lines.empty()) return "; it wrote nothing";
  std::string out = "; its last lines:";
  for (size_t i = lines.size() > kQuotedLines ? lines.size() - kQuotedLines : 0; i < lines.size();
       ++i) {
    out += std::string("\n  ") + (lines[i].err ? "stderr| " : "stdout| ") + lines[i].text;
  }
  return out;
}

}  // namespace

void LoadService::start_target(LoadSubmission sub, Started started, Refused refused) {
  const std::string id = sub.id;
  auto pending = std::make_shared<LoadSubmission>(std::move(sub));
  auto on_ready = [this, id, pending, started, refused](Status s) {
    auto it = targets_.find(id);
    if (it == targets_.end()) return;
    if (!s) {
      std::string why = "the target " + s.message() + last_lines(*it->second);
      targets_.erase(it);  // kills what is left of it
      spdlog::warn("load {}: {}", id, why);
      refused(why);
      return;
    }
    pending->spec.watch.pid = it->second->pid();
    spdlog::info("load {}: the target (pid {}) is ready", id, it->second->pid());
    auto launched = [this, started](const LoadTest& t) {
      if (LoadTest* test = loads_.find(t.id)) copy_target(*test);
      started(t);
    };
    run(std::move(*pending), launched, [this, id, refused](const std::string& why) {
      targets_.erase(id);
      refused(why);
    });
  };
  auto on_exit = [this, id](TargetProcess::Exit e) { on_target_exit(id, e); };
  auto target = TargetProcess::start(loop_, pending->spec.target, on_ready, on_exit);
  if (!target) {
    refused("cannot start the target: " + target.status().message());
    return;
  }
  targets_[id] = std::move(*target);
}

void LoadService::stop_target_after(const std::string& id) {
  auto it = targets_.find(id);
  if (it == targets_.end()) return;
  LoadTest* t = loads_.find(id);
  if (t == nullptr || !t->ended()) return;
  copy_target(*t);
  it->second->stop();
}

void LoadService::copy_target(LoadTest& t) const {
  auto it = targets_.find(t.id);
  if (it == targets_.end()) return;
  const TargetProcess& p = *it->second;
  if (!t.process) {
    t.process.emplace();
    t.process->cmd = t.spec.target.cmd;
    t.process->state = "running";
  }
  t.process->rss_peak = std::max(t.process->rss_peak, p.rss_peak());
  if (!p.cause().empty()) t.process->cause = p.cause();
  t.process->lines.clear();
  for (const TargetProcess::Line& l : p.lines())
    t.process->lines.push_back({l.err ? "stderr" : "stdout", l.text});
}

void LoadService::note_target_end(LoadTest& t, const TargetProcess::Exit& e, int64_t now_ms) const {
  copy_target(t);
  api::LoadTargetProcess& p = *t.process;
  p.state = e.stopped ? "stopped" : "died";
  if (e.signal != 0) {
    p.signal = signal_name(e.signal);
  } else {
    p.exit_code = e.exit_code;
  }
  p.ended_s = static_cast<double>(now_ms - t.started_ms) / 1000;
}

void LoadService::on_target_exit(const std::string& id, TargetProcess::Exit e) {
  LoadTest* t = loads_.find(id);
  if (t == nullptr) {  // ready, but the test had not started: it waits for workers
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->sub.id != id) continue;
      Pending p = std::move(*it);
      pending_.erase(it);
      p.refused("the target ended before the test started" + last_lines(*targets_.at(id)));
      break;
    }
    targets_.erase(id);
    return;
  }
  const int64_t now = unix_ms_now();
  note_target_end(*t, e, now);
  targets_.erase(id);
  if (e.stopped) return;
  spdlog::warn("load {}: the target (pid {}) ended by itself", id, t->spec.watch.pid);
  if (auto reason = loads_.on_target_died(*t, now)) end(*t, LoadState::kAborted, *reason);
}

}  // namespace corral::master
