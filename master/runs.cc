#include "master/runs.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "config/config.h"
#include "master/ids.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using nlohmann::json;

InstanceState state_of(ipc::Outcome o) {
  switch (o) {
    case ipc::Outcome::kPassed:
      return InstanceState::kPassed;
    case ipc::Outcome::kFailed:
      return InstanceState::kFailed;
    case ipc::Outcome::kErrored:
      return InstanceState::kErrored;
    case ipc::Outcome::kCancelled:
      return InstanceState::kCancelled;
  }
  return InstanceState::kErrored;
}

}  // namespace

std::string_view to_string(InstanceState s) {
  switch (s) {
#define CORRAL_INSTANCE_CASE(name, text) \
  case InstanceState::name:              \
    return text;
    CORRAL_INSTANCE_STATES(CORRAL_INSTANCE_CASE)
#undef CORRAL_INSTANCE_CASE
  }
  return "unknown";
}

std::optional<InstanceState> instance_state_from(std::string_view s) {
#define CORRAL_INSTANCE_PARSE(name, text) \
  if (s == text) return InstanceState::name;
  CORRAL_INSTANCE_STATES(CORRAL_INSTANCE_PARSE)
#undef CORRAL_INSTANCE_PARSE
  return std::nullopt;
}

bool Run::finished() const {
  return count(InstanceState::kQueued) == 0 && count(InstanceState::kRunning) == 0;
}

size_t Run::pending() const {
  size_t n = requeued.size();
  if (!clustered) return n + (size - next_fresh);
  for (const auto& [first, end] : fresh) n += end - first;
  return n;
}

uint32_t Run::fresh_first() const {
  if (!clustered) return next_fresh;
  return fresh.empty() ? 0 : fresh.front().first;
}

uint32_t Run::fresh_count() const {
  if (!clustered) return size - next_fresh;
  return fresh.empty() ? 0 : fresh.front().second - fresh.front().first;
}

void Run::take_fresh(uint32_t n) {
  if (!clustered) {
    next_fresh += n;
    return;
  }
  if (fresh.empty()) return;
  fresh.front().first += n;
  if (fresh.front().first >= fresh.front().second) fresh.pop_front();
}

const InstanceRecord& Run::instance(uint32_t i) const {
  static const InstanceRecord kQueued;
  static const InstanceRecord kCancelled = [] {
    InstanceRecord r;
    r.state = InstanceState::kCancelled;
    return r;
  }();
  if (const InstanceRecord* in = instances.find(i)) return *in;
  return cancelled ? kCancelled : kQueued;
}

size_t Run::cancel_unfinished(int64_t ended_ms) {
  size_t n = 0;
  instances.each(size, [&](uint32_t i, InstanceRecord& in) {
    if (is_terminal(in.state)) return;
    set_state(i, InstanceState::kCancelled);
    in.ended_ms = ended_ms;
    in.worker = -1;
    ++n;
  });
  // Those never placed have no record: they read as cancelled with the run (instance()).
  const uint32_t unplaced = count(InstanceState::kQueued);
  counts[static_cast<size_t>(InstanceState::kQueued)] = 0;
  counts[static_cast<size_t>(InstanceState::kCancelled)] += unplaced;
  return n + unplaced;
}

const char* Run::state() const {
  if (cancelled) return "cancelled";
  if (finished()) return "finished";
  if (!quarantine.empty()) return "quarantined";
  if (count(InstanceState::kQueued) == size) return "queued";
  return "running";
}

Run& Runs::create(std::shared_ptr<const scenario::Scenario> scenario, json vars, uint32_t instances,
                  int64_t now_ms, uint32_t priority, WithRun with_run, json data) {
  auto run = std::make_unique<Run>();
  run->seq = next_seq_++;
  run->id = numbered_id('r', run->seq);  // the journal keeps the sequence
  run->size = instances;
  run->scenario = std::move(scenario);
  run->vars = std::move(vars);
  run->created_ms = now_ms;
  run->priority = priority;
  run->data = std::move(data);
  run->counts[static_cast<size_t>(InstanceState::kQueued)] = instances;
  run->clustered = clustered_;
  Run& ref = *run;
  by_id_[run->id] = run.get();
  runs_.push_back(std::move(run));
  journal::RunRow row;
  row.id = ref.id;
  row.seq = ref.seq;
  row.scenario = ref.scenario->source.dump();
  row.vars = ref.vars.dump();
  row.instances = ref.size;
  row.created_ms = now_ms;
  row.priority = priority;
  if (!ref.data.is_null()) row.data = ref.data.dump();
  journal_write(
      [row, with_run = std::move(with_run)](journal::Store& s) {
        Status st = s.put_run(row);
        return st && with_run ? with_run(s, row.id) : st;
      },
      {ref.id});
  return ref;
}

Run* Runs::find(const std::string& id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

// Most rows in the journal only change state; those of instances resumed from a dead host
// also count the resume.
void Runs::mark_running(Run& run, const std::vector<uint32_t>& index, int slot, int64_t now_ms) {
  std::vector<uint32_t> marked;
  std::vector<journal::Store::Resumed> resumed;
  marked.reserve(index.size());
  for (uint32_t i : index) {
    run.set_state(i, InstanceState::kRunning);
    InstanceRecord& in = run.instances.at(i);
    in.worker = slot;
    if (in.started_ms == 0) in.started_ms = now_ms;
    if (in.row_behind) {
      in.row_behind = false;
      resumed.push_back(resumed_row(run, i));
    } else {
      marked.push_back(i);
    }
  }
  if (!resumed.empty()) {
    journal_write([id = run.id, resumed = std::move(resumed)](
                      journal::Store& s) { return s.mark_resumed(id, resumed); },
                  {run.id});
  }
  if (marked.empty()) return;
  journal_write([id = run.id, marked = std::move(marked),
                 now_ms](journal::Store& s) { return s.mark_running(id, marked, now_ms); },
                {run.id});
}

void Run::set_state(uint32_t index, InstanceState to) {
  InstanceRecord& in = instances.at(index);
  counts[static_cast<size_t>(in.state)] -= 1;
  counts[static_cast<size_t>(to)] += 1;
  in.state = to;
}

void Runs::finish_instance(Run& run, uint32_t index, InstanceState state, const std::string& reason,
                           int64_t started_ms, int64_t ended_ms) {
  InstanceRecord& in = run.instances.at(index);
  run.set_state(index, state);
  run.callbacks.erase(index);
  in.make_detail().reason = reason;
  in.worker = -1;
  if (in.started_ms == 0) in.started_ms = started_ms;
  in.ended_ms = ended_ms;
  run.durations_ms.push_back(elapsed_ms(in.started_ms, ended_ms));
  if (state == InstanceState::kFailed || state == InstanceState::kErrored) {
    run.failures[{in.next_step, reason}] += 1;
  }
  journal_instance(run, index);
  if (run.clustered) {
    range_finished(run, index);  // other hosts hold the rest: the journal tells when it ends
    return;
  }
  if (run.finished() && run.finished_ms == 0) on_finished(run, ended_ms);
}

void Runs::on_finished(Run& run, int64_t now_ms, const journal::RunTally* tally) {
  run.finished_ms = now_ms;
  run.callbacks.clear();
  run.summary = make_summary(run, tally);
  prune_due_ = true;
  journal_write([id = run.id, now_ms, cancelled = run.cancelled, summary = run.summary.dump()](
                    journal::Store& s) { return s.finish_run(id, now_ms, cancelled, summary); });
  if (on_finished_) on_finished_(run);
}

void Runs::apply(int slot, const ipc::Event& ev, int64_t now_ms) {
  Run* run = find(ev.run);
  if (run == nullptr) return;
  uint32_t i = ev.index;
  InstanceRecord* found = run->whole ? run->instances.find(i) : nullptr;
  if (found == nullptr) return;  // never placed: no worker runs it
  InstanceRecord& in = *found;
  if (in.state != InstanceState::kRunning || in.worker != slot) return;  // stale or cancelled
  switch (ev.kind) {
    case ipc::EventKind::kStep:
      apply_step(*run, i, ev);
      return;
    case ipc::EventKind::kProgress:
      if (ev.checkpoint.step != in.next_step) return;  // a report older than the step's end
      in.make_detail().checkpoint = std::make_unique<ipc::Checkpoint>(ev.checkpoint);
      journal_instance(*run, i);
      return;
    case ipc::EventKind::kDone:
      finish_instance(*run, i, state_of(ev.outcome), ev.reason,
                      ev.started_ms != 0 ? ev.started_ms : now_ms,
                      ev.ended_ms != 0 ? ev.ended_ms : now_ms);
      return;
  }
}

void Runs::apply_step(Run& run, uint32_t i, const ipc::Event& ev) {
  InstanceRecord& in = run.instances.at(i);
  InstanceDetail& more = in.make_detail();
  StepRecord r;
  r.step = ev.step;
  r.state = std::string(ipc::to_string(ev.outcome));
  r.attempts = ev.attempts;
  r.started_ms = ev.started_ms;
  r.ended_ms = ev.ended_ms;
  r.status = ev.status;
  r.until_ms = ev.until_ms;
  r.tls_us = ev.tls_us;
  r.reason = ev.reason;
  r.url = ev.url;
  if (run.body_bytes + ev.body.size() <= opts_.body_bytes) {
    r.body = ev.body;
    run.body_bytes += r.body.size();
  }
  if (in.started_ms == 0) in.started_ms = r.started_ms;
  if (ev.in_branch) {
    // A step of a parallel step's branch: the instance is still at the parallel step, and
    // its checkpoint says where each branch is.
    more.checkpoint = std::make_unique<ipc::Checkpoint>(ev.checkpoint);
  } else {
    if (ev.outcome == ipc::Outcome::kPassed) in.next_step = r.step + 1;
    if (ev.vars.is_object()) more.vars = ev.vars;
    more.checkpoint.reset();  // the step it described has ended
  }
  if (auto c = run.callbacks.find(i); c != run.callbacks.end() && c->second["step"] <= r.step) {
    run.callbacks.erase(c);  // used
  }
  more.steps.push_back(std::move(r));
  // The step and the instance's new position go in one write: a restart never sees one
  // without the other.
  journal_write(
      [step = step_row(run, i, more.steps.size() - 1),
       row = instance_row(run, i)](journal::Store& s) {
        Status st = s.put_step(step);
        return st ? s.put_instance(row) : st;
      },
      {run.id, i});
}

void Runs::requeue_worker(Death death) {
  Requeue job;
  job.death = std::move(death);
  requeues_.push_back(std::move(job));
}

bool Runs::requeuing(int slot) const {
  return std::any_of(requeues_.begin(), requeues_.end(),
                     [slot](const Requeue& r) { return r.death.slot == slot; });
}

bool Runs::requeue_work(const uv::Slice& slice) {
  while (!requeues_.empty()) {
    if (!requeue_some(requeues_.front(), &slice)) return true;
    Requeue job = std::move(requeues_.front());
    requeues_.pop_front();
    if (job.death.done) job.death.done(job.requeued, job.runs);
  }
  return false;
}

size_t Runs::requeue_worker(int slot, const std::string& why,
                            const std::optional<std::pair<std::string, uint32_t>>& culprit,
                            bool blame_all, std::vector<std::string>* runs) {
  Requeue job;
  job.death = {slot, why, culprit, blame_all, nullptr};
  requeue_some(job, nullptr);
  if (runs != nullptr) runs->insert(runs->end(), job.runs.begin(), job.runs.end());
  return job.requeued;
}

bool Runs::requeue_some(Requeue& job, const uv::Slice* slice) {
  // Runs are in the order of their numbers: the job finds its place again by number, whatever
  // was added or forgotten meanwhile.
  auto it = std::find_if(runs_.begin(), runs_.end(),
                         [&job](const auto& r) { return r->seq >= job.run_seq; });
  for (; it != runs_.end(); ++it) {
    Run& run = **it;
    if (run.seq != job.run_seq) job.index = 0;
    job.run_seq = run.seq;
    if (run.finished() || !run.whole) continue;
    for (uint32_t n = 0;; ++n) {
      job.index = run.instances.next_held(job.index, run.size);
      if (job.index >= run.size) break;
      if (slice != nullptr && n > 0 && n % 64 == 0 && slice->over()) return false;
      InstanceRecord& in = *run.instances.find(job.index);
      if (in.state == InstanceState::kRunning && in.worker == job.death.slot) {
        if (job.runs.empty() || job.runs.back() != run.id) job.runs.push_back(run.id);
        requeue_one(job, run, job.index, in);
      }
      ++job.index;
    }
    job.run_seq = run.seq + 1;
    job.index = 0;
  }
  return true;
}

void Runs::requeue_one(Requeue& job, Run& run, uint32_t i, InstanceRecord& in) {
  const Death& d = job.death;
  in.worker = -1;
  const bool blamed =
      d.culprit ? (d.culprit->first == run.id && d.culprit->second == i) : d.blame_all;
  if (blamed && in.crash_resumes >= opts_.max_resumes) {
    // Its worker keeps dying with it: one poisonous instance must not take every worker.
    finish_instance(run, i, InstanceState::kErrored,
                    "its worker died with it " + std::to_string(in.crash_resumes + 1) + " times (" +
                        d.why + "); max_resumes is " + std::to_string(opts_.max_resumes),
                    in.started_ms, unix_ms_now());
    return;
  }
  run.set_state(i, InstanceState::kQueued);
  in.resumes += 1;
  if (blamed) in.crash_resumes += 1;
  in.make_detail().resume_reasons.push_back(d.why);
  run.requeued.push_back(i);
  journal_instance(run, i);
  ++job.requeued;
}

Result<size_t> Runs::hand_back(int slot, const json& instances, const std::string& why) {
  if (!instances.is_object()) return protocol_error("handback.instances: expected an object");
  size_t n = 0;
  for (const auto& [id, list] : instances.items()) {
    if (!list.is_object())
      return protocol_error("handback.instances." + id + ": expected an object");
    Run* run = find(id);
    for (const auto& [key, json_cp] : list.items()) {
      std::string path = "handback.instances." + id + "." + key;
      uint32_t i = 0;
      auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), i);
      if (ec != std::errc() || end != key.data() + key.size()) {
        return protocol_error(path + ": not an instance number");
      }
      auto cp = ipc::checkpoint_from_json(json_cp, path);
      if (!cp) return cp.status();
      InstanceRecord* in = run != nullptr && run->whole ? run->instances.find(i) : nullptr;
      if (in == nullptr || in->state != InstanceState::kRunning || in->worker != slot) continue;
      run->set_state(i, InstanceState::kQueued);
      in->worker = -1;
      in->resumes += 1;
      InstanceDetail& more = in->make_detail();
      more.checkpoint = std::make_unique<ipc::Checkpoint>(std::move(*cp));
      more.resume_reasons.push_back(why);
      run->requeued.push_back(i);
      journal_instance(*run, i);
      ++n;
    }
  }
  return n;
}

std::vector<Run*> Runs::worker_died(const std::vector<std::string>& runs, const std::string& why,
                                    int64_t now_ms) {
  std::vector<Run*> quarantined;
  if (opts_.quarantine_after == 0) return quarantined;
  for (const std::string& id : runs) {
    Run* run = find(id);
    if (run == nullptr || run->finished() || !run->quarantine.empty()) continue;
    std::erase_if(run->deaths_ms,
                  [&](int64_t at) { return now_ms - at > opts_.quarantine_window_ms; });
    run->deaths_ms.push_back(now_ms);
    if (run->deaths_ms.size() < opts_.quarantine_after) continue;
    run->quarantine =
        std::to_string(run->deaths_ms.size()) +
        " workers died while running its instances within " +
        config::format_duration_ms(static_cast<uint64_t>(opts_.quarantine_window_ms)) +
        " (the last: " + why +
        "); its instances are not placed until "
        "`corral resume " +
        run->id + "` (or cancel it)";
    journal_write([id = run->id, reason = run->quarantine](journal::Store& s) {
      return s.set_quarantine(id, reason);
    });
    quarantined.push_back(run);
  }
  return quarantined;
}

uint32_t Runs::crash_resumes(const std::pair<std::string, uint32_t>& instance) {
  Run* run = find(instance.first);
  if (run == nullptr || !run->whole) return 0;
  return run->instance(instance.second).crash_resumes;
}

bool Runs::resume(Run& run) {
  if (run.quarantine.empty()) return false;
  run.quarantine.clear();
  run.deaths_ms.clear();
  journal_write([id = run.id](journal::Store& s) { return s.set_quarantine(id, ""); });
  return true;
}

size_t Runs::cancel(Run& run, int64_t now_ms) {
  if (run.finished()) return 0;  // nothing left to cancel: the run keeps its outcome
  run.cancelled = true;
  const size_t n = run.cancel_unfinished(now_ms);
  run.next_fresh = run.size;
  run.requeued.clear();
  run.fresh.clear();
  run.claims.clear();
  if (run.finished_ms == 0) on_finished(run, now_ms);
  return n;
}

size_t Runs::pending() const {
  size_t n = 0;
  for (const auto& r : runs_) n += r->pending();
  return n;
}

size_t Runs::prune(int64_t now_ms) {
  size_t forgotten = prune_finished_before(now_ms - opts_.keep_for_ms);
  size_t finished = 0;
  for (const auto& r : runs_) finished += r->finished() ? 1 : 0;
  for (auto it = runs_.begin(); finished > opts_.keep_runs && it != runs_.end();) {
    if ((*it)->finished()) {
      it = forget(it);
      --finished;
      ++forgotten;
    } else {
      ++it;
    }
  }
  // Only the newest finished runs stay whole, as many as keep_whole and keep_whole_instances
  // allow: the first run past either limit and every older one keep their summary alone.
  size_t whole = 0, instances = 0;
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    Run& r = **it;
    if (!r.finished() || !r.whole) continue;
    instances += r.size;
    if (++whole <= opts_.keep_whole && instances <= opts_.keep_whole_instances) continue;
    whole = opts_.keep_whole;  // past a limit: every older run is summarised too
    r.whole = false;
    r.instances.clear();
    std::vector<int64_t>().swap(r.durations_ms);
    r.failures.clear();
  }
  if (forgotten > 0) journal_write([](journal::Store& s) { return s.reclaim(); });
  prune_due_ = false;
  return forgotten;
}

size_t Runs::prune_finished_before(int64_t before_ms) {
  size_t n = 0;
  for (auto it = runs_.begin(); it != runs_.end();) {
    if ((*it)->finished() && (*it)->finished_ms < before_ms) {
      it = forget(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

Runs::RunList::iterator Runs::forget(RunList::iterator it) {
  journal_write([id = (*it)->id](journal::Store& s) { return s.delete_run(id); });
  if ((*it)->data.is_object()) {
    std::remove((*it)->data.value("index", "").c_str());  // the index of its data rows
  }
  by_id_.erase((*it)->id);
  return runs_.erase(it);
}

void Runs::journal_instance(const Run& run, uint32_t index) {
  if (journal_ != nullptr) journal_->put_instance(instance_row(run, index));
}

void Runs::journal_write(std::function<Status(journal::Store&)> op, journal::WriteTag tag) {
  if (journal_ != nullptr) journal_->write(std::move(op), std::move(tag));
}

void Runs::on_journal_rejected(const journal::WriteTag& tag, const std::string& error) {
  Run* run = find(tag.run);
  if (run == nullptr || !run->whole) return;
  const std::string kPrefix = "the journal rejected its record: ";
  auto end = [&](uint32_t i) {
    InstanceRecord& in = run->instances.at(i);
    // Its record of the rejection was refused too: writing it again could be refused again,
    // for ever. It stays errored in memory.
    if (in.detail().reason.starts_with(kPrefix)) return;
    int64_t now = unix_ms_now();
    if (!is_terminal(in.state)) {
      finish_instance(*run, i, InstanceState::kErrored, kPrefix + error, now, now);
      return;
    }
    // Its final record was the one refused: record the refusal instead.
    run->set_state(i, InstanceState::kErrored);
    in.make_detail().reason = kPrefix + error;
    journal_instance(*run, i);
  };
  if (tag.instance >= 0 && static_cast<uint64_t>(tag.instance) < run->size) {
    end(static_cast<uint32_t>(tag.instance));
    return;
  }
  // A record of the whole run was refused: it cannot be kept, so none of it goes on.
  for (uint32_t i = 0; i < run->size; ++i) {
    if (!is_terminal(run->instance(i).state)) end(i);
  }
}

}  // namespace corral::master
