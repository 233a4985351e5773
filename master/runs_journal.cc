// The runs table and the journal: rows from records, records from rows, and the start-up
// restore that resumes every unfinished run.
#include <spdlog/spdlog.h>

#include <set>

#include "config/scenario/parse.h"
#include "master/runs.h"
#include "shared/ipc/checkpoint.h"

namespace corral::master {
namespace {

using nlohmann::json;

json parse_or(const std::string& text, json fallback) {
  if (text.empty()) return fallback;
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

std::string reasons_text(const InstanceRecord& in) {
  return json(in.detail().resume_reasons).dump();
}

}  // namespace

journal::InstanceRow instance_row(const Run& run, uint32_t index) {
  const InstanceRecord& in = run.instance(index);
  journal::InstanceRow r;
  r.run_id = run.id;
  r.idx = index;
  r.state = std::string(to_string(in.state));
  r.next_step = in.next_step;
  r.started_ms = in.started_ms;
  r.ended_ms = in.ended_ms;
  const InstanceDetail& more = in.detail();
  r.reason = more.reason;
  r.resumes = in.resumes;
  r.crash_resumes = in.crash_resumes;
  r.resume_reasons = reasons_text(in);
  r.vars = more.vars.is_object() ? more.vars.dump() : "{}";
  if (more.checkpoint) ipc::append_json(*more.checkpoint, r.checkpoint);  // else none: ""
  return r;
}

journal::Store::Resumed resumed_row(const Run& run, uint32_t index) {
  const InstanceRecord& in = run.instance(index);
  return {index, in.resumes, reasons_text(in)};
}

journal::StepRow step_row(const Run& run, uint32_t index, size_t seq) {
  const StepRecord& s = run.instance(index).detail().steps[seq];
  return {.run_id = run.id,
          .idx = index,
          .seq = static_cast<uint32_t>(seq),
          .step = s.step,
          .state = s.state,
          .attempts = s.attempts,
          .started_ms = s.started_ms,
          .ended_ms = s.ended_ms,
          .status = s.status,
          .until_ms = s.until_ms,
          .reason = s.reason,
          .url = s.url,
          .tls_us = static_cast<int64_t>(s.tls_us),
          .body = s.body};
}

namespace {

// A finished run held as its summary: the counts it ended with.
void counts_from_summary(Run& run) {
  const json& counts = run.summary.is_object() ? run.summary["counts"] : json();
  for (size_t s = 0; s < kInstanceStates && counts.is_array() && s < counts.size(); ++s) {
    if (counts[s].is_number_unsigned()) run.counts[s] = counts[s].get<uint32_t>();
  }
}

std::vector<std::string> reasons_from(const std::string& text) {
  std::vector<std::string> out;
  json list = parse_or(text, json::array());
  for (const json& r : list.is_array() ? list : json::array()) {
    if (r.is_string()) out.push_back(r.get<std::string>());
  }
  return out;
}

// One instance row into its record. A row that cannot be resumed as it stands (a step past
// the scenario's end, a checkpoint of the wrong shape) is mended or ended here, so that what
// reaches a worker is always well-formed.
void instance_from_row(Run& run, const journal::InstanceRow& r) {
  InstanceRecord& in = run.instances.at(r.idx);
  run.set_state(r.idx, instance_state_from(r.state).value_or(InstanceState::kQueued));
  in.next_step = r.next_step;
  in.started_ms = r.started_ms;
  in.ended_ms = r.ended_ms;
  in.resumes = r.resumes;
  in.crash_resumes = r.crash_resumes;
  // What the row holds beyond the record's place, kept when there is any.
  std::vector<std::string> reasons = reasons_from(r.resume_reasons);
  json vars = parse_or(r.vars, json::object());
  if (!r.reason.empty()) in.make_detail().reason = r.reason;
  if (!reasons.empty()) in.make_detail().resume_reasons = std::move(reasons);
  if (vars.is_object() && !vars.empty()) in.make_detail().vars = std::move(vars);
  json cp = parse_or(r.checkpoint, json());
  if (cp.is_object()) {
    auto decoded = ipc::checkpoint_from_json(cp, "checkpoint");
    if (decoded && decoded->step < run.scenario->top_steps()) {
      in.make_detail().checkpoint = std::make_unique<ipc::Checkpoint>(std::move(*decoded));
    } else {
      spdlog::warn("journal: run {} instance {}: its checkpoint is damaged and is dropped ({})",
                   run.id, r.idx, decoded ? "step out of range" : decoded.status().message());
    }
  }
  if (!is_terminal(in.state) && in.next_step >= run.scenario->top_steps()) {
    run.set_state(r.idx, InstanceState::kErrored);
    in.make_detail().reason = "its record in the journal names step " +
                              std::to_string(in.next_step) + ", past the scenario's last step";
  }
  if (is_terminal(in.state) && in.state != InstanceState::kCancelled) {
    run.durations_ms.push_back(elapsed_ms(in.started_ms, in.ended_ms));
    if (in.state != InstanceState::kPassed) run.failures[{in.next_step, in.detail().reason}] += 1;
  }
}

}  // namespace

void fill_from_rows(Run& run, const journal::StoredRun& rows) {
  for (const journal::InstanceRow& r : rows.instances) {
    if (r.idx < run.size) instance_from_row(run, r);
  }
  for (const journal::StepRow& r : rows.steps) {
    if (r.idx >= run.size) continue;
    run.instances.at(r.idx).make_detail().steps.push_back(
        {r.step, r.state, r.attempts, r.started_ms, r.ended_ms, r.status, r.until_ms, r.reason,
         r.url, static_cast<uint64_t>(std::max<int64_t>(0, r.tls_us)), r.body});
    run.body_bytes += r.body.size();
  }
  // A call the instance has not used yet goes to the worker that resumes it.
  for (const journal::CallbackRow& r : rows.callbacks) {
    if (r.idx >= run.size) continue;
    const InstanceRecord& in = run.instance(r.idx);
    if (is_terminal(in.state) || in.next_step > r.step) continue;
    run.callbacks[r.idx] = {{"step", r.step}, {"body", parse_or(r.body, json())}};
  }
}

namespace {

Result<std::unique_ptr<Run>> build_run(const journal::StoredRun& stored, bool whole) {
  const journal::RunRow& row = stored.run;
  json vars = parse_or(row.vars, json::object());
  if (!vars.is_object()) vars = json::object();
  std::set<std::string> extra;
  for (const auto& [k, v] : vars.items()) extra.insert(k);
  auto scenario = scenario::parse_scenario(parse_or(row.scenario, json()), extra);
  if (!scenario) {
    return invalid_argument("run " + row.id + ": its scenario in the journal does not parse: " +
                            scenario.status().message());
  }
  if (row.instances == 0 || row.instances > kMaxRunInstances) {
    return invalid_argument("run " + row.id + ": the journal gives it " +
                            std::to_string(row.instances) + " instances");
  }
  auto run = std::make_unique<Run>();
  run->id = row.id;
  run->seq = row.seq;
  run->size = row.instances;
  run->scenario = *scenario;
  run->vars = std::move(vars);
  run->created_ms = row.created_ms;
  run->finished_ms = row.finished_ms;
  run->cancelled = row.cancelled;
  run->quarantine = row.quarantine;
  run->priority = row.priority;
  if (!row.data.empty()) run->data = parse_or(row.data, json());
  run->summary = parse_or(row.summary, json());
  run->whole = whole;
  run->next_fresh = run->size;
  if (!whole) {
    counts_from_summary(*run);
    return run;
  }
  run->counts[static_cast<size_t>(InstanceState::kQueued)] = run->size;
  fill_from_rows(*run, stored);
  // Instances never dispatched have no row: they ended with the run.
  if (run->cancelled) run->cancel_unfinished(run->finished_ms);
  return run;
}

}  // namespace

Result<std::unique_ptr<Run>> run_from_journal(const journal::StoredRun& stored, bool whole) {
  try {
    return build_run(stored, whole);
  } catch (const std::exception& e) {
    // A damaged file must not stop the master: the run is left out, with the reason.
    return invalid_argument("run " + stored.run.id +
                            ": its record in the journal is damaged: " + e.what());
  }
}

Status Runs::restore_rows(Run& run) {
  const uint32_t step = std::max<uint32_t>(opts_.restore_page, 1);
  for (uint32_t from = 0; from < run.size; from += step) {
    const uint32_t to = static_cast<uint32_t>(std::min<uint64_t>(run.size, uint64_t{from} + step));
    auto page = journal_->load_now(
        [&run, from, to](journal::Store& s) { return s.load_run_page(run.id, from, to); });
    if (!page) return Status(Code::kIo, page.status().message());
    try {
      fill_from_rows(run, *page);
    } catch (const std::exception& e) {
      return invalid_argument("run " + run.id + ": its record in the journal is damaged: " +
                              e.what());
    }
  }
  return Status();
}

Result<size_t> Runs::restore(int64_t now_ms) {
  if (journal_ == nullptr) return size_t{0};
  auto seq =
      journal_->load_now([](journal::Store& s) { return s.next_seq(journal::Store::kRunSeq); });
  if (!seq) return seq.status();
  auto rows = journal_->load_now([](journal::Store& s) { return s.runs(); });
  if (!rows) return rows.status();
  next_seq_ = std::max<uint64_t>(*seq, next_seq_);
  // Read everything first: the writer thread may use the store as soon as the first write
  // below is queued, and the store belongs to one thread at a time.
  std::vector<Run*> unfinished;
  for (journal::RunRow& row : *rows) {
    bool finished = row.finished_ms != 0;
    // An unfinished run starts whole with every instance queued; its rows come next, a page
    // at a time, so that a run of a million is never held twice (rows and records) at once.
    auto built = run_from_journal(journal::StoredRun{std::move(row), {}, {}, {}}, !finished);
    if (built && !finished) {
      if (Status s = restore_rows(**built); !s) {
        if (s.code() == Code::kIo) return s;
        built = s;
      }
    }
    if (!built) {
      spdlog::error("journal: {}; the run is left out", built.status().message());
      continue;
    }
    Run& run = **built;
    by_id_[run.id] = &run;
    runs_.push_back(std::move(*built));
    if (!finished) unfinished.push_back(&run);
  }
  size_t resumed = 0;
  for (Run* r : unfinished) {
    if (clustered_) {
      unclaimed(*r);  // its instances wait for this host, or another, to claim them
      continue;
    }
    resumed += requeue_restored(*r);
    if (r->finished()) on_finished(*r, now_ms);
  }
  // Retention applies before the first request: a prune that a crash cut short is redone.
  prune(now_ms);
  return resumed;
}

size_t Runs::requeue_restored(Run& run) {
  // Every instance that was dispatched and has not ended continues from its last finished
  // step; those never dispatched start as if new.
  run.next_fresh = 0;
  run.instances.each(run.size, [&run](uint32_t i, const InstanceRecord& in) {
    if (in.started_ms != 0 || in.state != InstanceState::kQueued) run.next_fresh = i + 1;
  });
  size_t resumed = 0;
  for (uint32_t i = 0; i < run.next_fresh; ++i) {
    InstanceRecord& in = run.instances.at(i);
    if (is_terminal(in.state)) continue;
    if (in.state == InstanceState::kRunning) {
      run.set_state(i, InstanceState::kQueued);
      in.resumes += 1;
      in.make_detail().resume_reasons.push_back("master_restart");
      journal_instance(run, i);
    }
    run.requeued.push_back(i);
    ++resumed;
  }
  return resumed;
}

void Runs::read_page(const std::string& id, uint32_t from, uint32_t to,
                     std::function<void(Page)> fn) {
  if (journal_ == nullptr || from >= to) {
    fn(Status(Code::kUnavailable, "the run is not in memory and there is no journal"));
    return;
  }
  auto stored = std::make_shared<Result<journal::StoredRun>>(Status(Code::kInternal, "not read"));
  journal_->read(
      [stored, id, from, to](journal::Store& s) { *stored = s.load_run_page(id, from, to); },
      [stored, from, to, fn = std::move(fn)] {
        if (!*stored) {
          fn(stored->status());
          return;
        }
        // The page as a run of its own: its instances renumbered from 0.
        journal::StoredRun& page = **stored;
        if (page.run.instances <= from) {
          fn(invalid_argument("run " + page.run.id + " has no instance " + std::to_string(from)));
          return;
        }
        page.run.instances = std::min(to, page.run.instances) - from;
        for (journal::InstanceRow& r : page.instances) r.idx -= from;
        for (journal::StepRow& r : page.steps) r.idx -= from;
        fn(run_from_journal(page, true));
      });
}

}  // namespace corral::master
