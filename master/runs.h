// Runs: what the master knows of every submitted run and each of its instances. Workers report
// transitions (a step ended, an instance ended); this table applies them, answers the runs
// API, and hands every change to the journal, from which restore() rebuilds it after a restart.
//
// Memory: an unfinished run holds a record for each instance placed so far (instance_table.h);
// one still waiting in the queue costs nothing but its place in the run's fresh range. A
// finished run is held whole while it is among the newest `keep_whole` finished ones and they
// hold at most `keep_whole_instances` instances between them; older ones keep only their
// summary (counts, durations, failures) and are read back from the journal when someone asks
// for their instances.
// Loop thread only.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario/model.h"
#include "master/instance_table.h"
#include "master/journal/journal.h"
#include "shared/api/runs.h"
#include "shared/ipc/events.h"
#include "shared/uv/next_turn.h"

namespace corral::master {

// The most instances one run may have (a submission, or a run read back from the journal).
constexpr uint32_t kMaxRunInstances = 1000000;

// The time from `from` to `to` (Unix ms), or 0 when they do not make an interval: times come
// from workers and the journal, and a damaged one must not overflow a subtraction.
inline int64_t elapsed_ms(int64_t from, int64_t to) {
  return from > 0 && to >= from ? to - from : 0;
}

struct Run {
  std::string id;
  uint64_t seq = 0;
  uint32_t size = 0;  // instances in the run (also when `instances` is not held in memory)
  std::shared_ptr<const scenario::Scenario> scenario;
  nlohmann::json vars;  // run-time vars
  int64_t created_ms = 0, finished_ms = 0;
  InstanceTable instances;  // records of the instances placed at least once
  std::array<uint32_t, kInstanceStates> counts{};
  uint32_t next_fresh = 0;        // instances at or past this were never dispatched
  std::deque<uint32_t> requeued;  // instances to resume from their checkpoint
  // A host of a cluster (docs/cluster.md) places only the instances of the ranges it claimed:
  // `next_fresh` is then unused, `fresh` holds the claimed ranges [first, end) never started,
  // and `claims` every range it holds (lo -> hi), until each is done.
  bool clustered = false;
  std::deque<std::pair<uint32_t, uint32_t>> fresh;
  std::map<uint32_t, uint32_t> claims;
  // A clustered run's counts over every host (Runs::set_cluster_counts); unset until read.
  std::optional<std::array<uint32_t, kInstanceStates>> cluster_counts;
  bool all_ended_at_last_count = false;  // every instance ended, by cluster_counts
  std::vector<int64_t> durations_ms;
  std::map<std::pair<uint32_t, std::string>, uint32_t> failures;  // (step, reason) -> count
  bool cancelled = false;
  uint32_t priority = 1;  // weight in the dispatcher's fair share (1 to 100)
  // The dispatcher places none of its instances while set: a schedule's run waits until it is in
  // the journal with its tick (RunService::submit).
  bool held = false;
  // Deaths of workers (hung, crashed, past a memory limit) while they ran its instances, Unix
  // ms, within RunsOptions::quarantine_window_ms; and, once there were quarantine_after of
  // them, why the dispatcher places none of its instances until Runs::resume() ("" when it
  // is not quarantined). Journaled, so that a restart does not start the deaths again.
  std::vector<int64_t> deaths_ms;
  std::string quarantine;
  bool whole = true;       // false: a finished run whose instances are only in the journal
  nlohmann::json summary;  // a finished run: Runs::make_summary(), as its journal row keeps it
  // Calls of callback steps' URLs the instances have not used yet, by index:
  // {"step": n, "body": <JSON>} (journaled; each placement hands it on in the checkpoint).
  std::map<uint32_t, nlohmann::json> callbacks;
  // A run over data rows (shared/data/rows.h), as workers get it in define_run: {"path",
  // "format", "index", "columns", "key"?, "rows", "skipped", "bad"}. Null for other runs.
  nlohmann::json data;
  size_t body_bytes = 0;  // of its steps' `body` texts, up to RunsOptions::body_bytes

  uint32_t count(InstanceState s) const { return counts[static_cast<size_t>(s)]; }
  // Instance `i`'s record: one never placed reads as queued, or cancelled once the run is.
  const InstanceRecord& instance(uint32_t i) const;
  // Moves instance `index` to state `to`, keeping `counts` in step.
  void set_state(uint32_t index, InstanceState to);
  bool finished() const;
  // Every instance not ended is cancelled (ended at `ended_ms`): those with a record one by one,
  // the rest by count alone. `cancelled` must be set first. Returns how many.
  size_t cancel_unfinished(int64_t ended_ms);
  size_t pending() const;
  // Instances never started that may be placed now: `fresh_count()` of them from
  // `fresh_first()` on; take_fresh() takes the first n of them.
  uint32_t fresh_first() const;
  uint32_t fresh_count() const;
  void take_fresh(uint32_t n);
  const char* state() const;
};

struct RunsOptions {
  uint32_t max_resumes = 5;               // worker deaths an instance survives before it is errored
  size_t keep_whole = 20;                 // finished runs held whole in memory, at most...
  size_t keep_whole_instances = 20000;    // ...with this many instances between them
  size_t keep_runs = 1000;                // finished runs kept at all (memory and journal)
  int64_t keep_for_ms = 7 * 86400000LL;   // finished runs older than this are pruned
  uint32_t restore_page = 50000;          // instance rows read per page at restore
  uint32_t quarantine_after = 3;          // worker deaths with a run's instances; 0: never
  int64_t quarantine_window_ms = 600000;  // ... within this long
  // The most bytes of failed steps' responses (StepRecord::body) one run keeps, in memory and in
  // the journal: at 512 bytes each, the first 32,768 failed steps or more. The steps that fail
  // after that keep their status and reason only, so that a large run whose every instance
  // fails does not hold half a kilobyte more per instance.
  size_t body_bytes = 16u << 20;
};

class Runs {
 public:
  // `journal` may be null (nothing is kept across restarts); it must outlive this table.
  explicit Runs(RunsOptions opts = {}, journal::Journal* journal = nullptr)
      : opts_(opts), journal_(journal) {}

  // Sets the journal (before restore() and the first change); it must outlive this table.
  void attach(journal::Journal* journal) { journal_ = journal; }
  // Called once for each run that ends (its last instance ended, it was cancelled, or restore()
  // found every instance ended), after its summary is recorded. It must not change this table.
  void set_on_finished(std::function<void(const Run&)> fn) { on_finished_ = std::move(fn); }
  // New limits (a config reload); retention applies them at the next prune().
  void set_options(RunsOptions opts) {
    opts_ = opts;
    prune_due_ = true;
  }
  // Rebuilds the table from the journal at start-up (before any write): finished runs as
  // summaries, unfinished ones whole, with every instance that was running put back in the
  // queue to resume from its last finished step (resume reason `master_restart`); then applies
  // retention. Returns how many instances will resume. Fails when the journal cannot be read.
  Result<size_t> restore(int64_t now_ms);
  // restore(): an unfinished run's instance and step rows into its records, a page at a time.
  // Fails with kIo when the journal cannot be read, kInvalidArgument when a row is damaged.
  Status restore_rows(Run& run);
  // restore(): an unfinished run's instances back in its queue, those that were running with a
  // resume (`master_restart`). Returns how many will resume.
  size_t requeue_restored(Run& run);

  // No instance has a record yet: each gets one when it is placed (instance_table.h).
  // `priority`: the run's weight in the dispatcher's fair share, 1 to 100.
  // `with_run`: a journal write that must commit with the run's row or not at all (a schedule's
  // record of the tick that fired the run): it runs in the same write, after put_run(), with the
  // run's id. Should it fail as wrong in itself, the run's row is set aside with it.
  using WithRun = std::function<Status(journal::Store&, const std::string& run_id)>;
  Run& create(std::shared_ptr<const scenario::Scenario> scenario, nlohmann::json vars,
              uint32_t instances, int64_t now_ms, uint32_t priority = 1, WithRun with_run = nullptr,
              nlohmann::json data = nullptr);
  Run* find(const std::string& id);
  // Runs in submission order, oldest first.
  const std::deque<std::unique_ptr<Run>>& all() const { return runs_; }
  // Reads instances from..to-1 (from < to <= the run's size) of a run back from the journal, on
  // the journal's thread, and calls `fn` later on the loop with a Run of to-from instances
  // (instance k is the run's from+k), or the error. For runs held as a summary: a large one is
  // read a page at a time, never whole.
  using Page = Result<std::unique_ptr<Run>>;
  void read_page(const std::string& id, uint32_t from, uint32_t to, std::function<void(Page)> fn);

  // The dispatcher placed these instances on `slot`.
  void mark_running(Run& run, const std::vector<uint32_t>& index, int slot, int64_t now_ms);
  // Applies one worker event (shared/ipc/events.h). Unknown runs or indexes are ignored:
  // the run may have been cancelled or pruned meanwhile.
  void apply(int slot, const ipc::Event& ev, int64_t now_ms);
  // The worker on `slot` died: every instance it ran goes back to the queue, to resume from
  // its last finished step, with `why` as the resume reason. The death counts against the
  // `culprit` (the instance the worker's loop was in) alone; with no culprit, against every
  // instance when `blame_all` (a crash outside any instance's code), else against none. An
  // instance blamed more than max_resumes times is errored instead.
  // This is done a slice at a time: requeue_work() goes on with it, and `done` gets how many
  // were requeued and the ids of the runs that had instances on the worker. Until then
  // requeuing(slot) is true, and the dispatcher places no instance on `slot`: an instance is
  // known to be on a worker by its slot alone.
  struct Death {
    int slot = -1;
    std::string why;
    std::optional<std::pair<std::string, uint32_t>> culprit;
    bool blame_all = false;
    std::function<void(size_t requeued, const std::vector<std::string>& runs)> done;
  };
  void requeue_worker(Death death);
  // Goes on with the requeues begun, until they are done or `slice` is over. Returns true
  // while some are left.
  bool requeue_work(const uv::Slice& slice);
  bool requeuing(int slot) const;
  // All at once (tests): returns how many were requeued; `runs`, when given, gets the ids of
  // the runs that had instances on the worker.
  size_t requeue_worker(int slot, const std::string& why,
                        const std::optional<std::pair<std::string, uint32_t>>& culprit = {},
                        bool blame_all = false, std::vector<std::string>* runs = nullptr);
  // A worker that ran instances of `runs` died (`why`: "worker_hung", ...) in a way that may be
  // theirs (a hang, a crash, a memory limit). The death counts against each of them; one with
  // quarantine_after deaths within quarantine_window_ms is quarantined (journaled): it keeps
  // its instances, but none is placed until resume(). Returns the runs quarantined now.
  std::vector<Run*> worker_died(const std::vector<std::string>& runs, const std::string& why,
                                int64_t now_ms);
  // Lifts the quarantine of `run` and forgets its deaths (journaled). False when it was not
  // quarantined.
  bool resume(Run& run);
  // How many worker deaths instance (run, index) was blamed for; 0 when it is not held here.
  uint32_t crash_resumes(const std::pair<std::string, uint32_t>& instance);
  // A stopping worker handed back these instances ({"<run>": {"<index>": checkpoint}}): they
  // go back to the queue with their checkpoints; `why` is the resume reason. Returns how many;
  // fails (kProtocol) when the payload is malformed, after taking the well-formed ones.
  Result<size_t> hand_back(int slot, const nlohmann::json& instances, const std::string& why);
  // Marks every unfinished instance cancelled. Returns how many.
  size_t cancel(Run& run, int64_t now_ms);
  // The journal set aside a write as wrong in itself (journal.h): the instance it was about
  // ends errored with the database's message, or every unfinished instance of the run when it
  // was about the whole run. The write is not retried.
  void on_journal_rejected(const journal::WriteTag& tag, const std::string& error);
  // Instances waiting for a worker, over all runs.
  size_t pending() const;
  // Applies retention: forgets finished runs beyond keep_runs or older than keep_for_ms, and
  // keeps only the summary of finished runs beyond keep_whole or keep_whole_instances. Returns
  // how many were forgotten.
  size_t prune(int64_t now_ms);
  // A run finished since the last prune().
  bool prune_due() const { return prune_due_; }
  // Forgets every finished run that finished before `before_ms`. Returns how many.
  size_t prune_finished_before(int64_t before_ms);

  // Cluster mode (runs_cluster.cc, docs/cluster.md): this host places only instances of ranges
  // it claimed. Set before restore(): runs restored or created from then on are clustered.
  void set_clustered(bool on) { clustered_ = on; }
  bool clustered() const { return clustered_; }
  // This host claimed instances lo..hi-1 of a run; `page` is the run's row with the rows of
  // those instances as the journal holds them now, which replace what this table knew of them.
  // A run not known here is added. Ended instances stay ended; one that was running (on a
  // host that lost it) resumes from its last finished step or checkpoint (resume reason
  // `host_lost`, not counted against max_resumes); those never started start fresh. Returns
  // how many wait to be placed, or why the run cannot be built from the journal.
  Result<size_t> claimed(const journal::StoredRun& page, uint32_t lo, uint32_t hi) {
    return claimed(page, {{lo, hi}});
  }
  // The same for several ranges of one run, read in one page: `ranges` ([lo, hi) each,
  // ascending, back to back) cover exactly the page's instances.
  using Range = std::pair<uint32_t, uint32_t>;
  Result<size_t> claimed(const journal::StoredRun& page, const std::vector<Range>& ranges);
  // This host lost its claims (fenced off): every clustered run's instances go back to
  // waiting for a claim, without a journal write. Returns the runs that had instances
  // running, which the caller stops on the workers (after Dispatcher::forget_run).
  std::vector<std::string> drop_claims();
  // A run submitted on another host, unfinished (`row` as the journal has it): held here too,
  // none of its instances claimed yet. Returns it, or nullptr when it cannot be built (logged)
  // or is held already.
  Run* adopt(const journal::RunRow& row);
  // The run's instances over every host, by state, as the journal holds them (rows counted by
  // state name; instances without a row are queued): what the API shows for it until it ends.
  // Every instance ended at two reads in a row and the run still open: whether it ended is
  // asked of the journal again, as when a range is done.
  void set_cluster_counts(Run& run, const std::map<std::string, uint64_t>& rows);
  // Another host finished or cancelled the run (`row` as the journal has it now): it is held
  // as its summary here. No-op for a run not held, or finished here.
  void finished_elsewhere(const journal::RunRow& row);

  // What the runs API shows (runs_json.cc, in shared/api/runs.h's models): a row of GET /runs;
  // GET /runs/<id> but for its queued_reason; instance `index` of GET /runs/<id>/instances, with
  // its vars and steps when `with_steps` (its "i" is `index`, its place in `run`).
  api::RunSummary summary_of(const Run& run) const;
  api::RunDetail detail_of(const Run& run) const;
  api::InstanceEntry instance_of(const Run& run, uint32_t index, bool with_steps) const;
  // The same written as JSON (hook payloads, tests).
  nlohmann::json summary_json(const Run& run) const { return api::to_json(summary_of(run)); }
  nlohmann::json detail_json(const Run& run) const { return api::to_json(detail_of(run)); }
  nlohmann::json instance_json(const Run& run, uint32_t index, bool with_steps) const {
    return api::to_json(instance_of(run, index, with_steps));
  }

 private:
  void apply_step(Run& run, uint32_t index, const ipc::Event& ev);
  void finish_instance(Run& run, uint32_t index, InstanceState state, const std::string& reason,
                       int64_t started_ms, int64_t ended_ms);
  // The run has no unfinished instance left: record its end and summary.
  // `tally`: a clustered run's durations and failures as the database summed them up
  // (finish_from_journal), in place of those held in memory.
  void on_finished(Run& run, int64_t now_ms, const journal::RunTally* tally = nullptr);
  // What a finished run's journal row keeps of it: {"counts": [by state], "duration_ms",
  // "failures"}, the last two as in detail_of().
  nlohmann::json make_summary(const Run& run, const journal::RunTally* tally) const;
  using RunList = std::deque<std::unique_ptr<Run>>;
  RunList::iterator forget(RunList::iterator it);
  // Journal writes (no-ops without a journal).
  void journal_instance(const Run& run, uint32_t index);
  void journal_write(std::function<Status(journal::Store&)> op, journal::WriteTag tag = {});
  // Cluster mode: instance `index` ended; when its range has no unfinished instance left,
  // the range is done, and the run is finished if every range is.
  void range_finished(Run& run, uint32_t index);
  void finish_if_complete(const std::string& id);
  void finish_from_journal(const std::string& id);
  void finish_tallied(const std::string& id, const journal::RunTally& tally);
  Run& add_in_order(std::unique_ptr<Run> run);
  void unclaimed(Run& run);
  size_t take_claimed(Run& run, uint32_t lo, uint32_t hi);

  // A death being dealt with (requeue_worker): the run and instance it goes on from.
  struct Requeue {
    Death death;
    uint64_t run_seq = 0;
    uint32_t index = 0;
    size_t requeued = 0;
    std::vector<std::string> runs;
  };
  // Deals with instance `i` of `run`, which ran on the dead worker.
  void requeue_one(Requeue& job, Run& run, uint32_t i, InstanceRecord& in);
  // Goes on with `job` until it is done (true) or `slice` is over (false).
  bool requeue_some(Requeue& job, const uv::Slice* slice);

  RunsOptions opts_;
  journal::Journal* journal_;
  std::deque<Requeue> requeues_;
  std::function<void(const Run&)> on_finished_;
  RunList runs_;
  std::map<std::string, Run*> by_id_;
  uint64_t next_seq_ = 1;
  bool prune_due_ = false;
  bool clustered_ = false;
};

// Conversions between the table and the journal's rows (runs_journal.cc).
journal::InstanceRow instance_row(const Run& run, uint32_t index);
// The columns of its row that a resume from a dead host changes (Store::mark_resumed).
journal::Store::Resumed resumed_row(const Run& run, uint32_t index);
journal::StepRow step_row(const Run& run, uint32_t index, size_t seq);
// A run rebuilt from the journal: whole when `stored` has its instances. Any row is accepted
// without throwing: a damaged run fails with the reason (the caller leaves it out), and a
// damaged instance is mended or ended errored.
Result<std::unique_ptr<Run>> run_from_journal(const journal::StoredRun& stored, bool whole);
// The records of a whole run from instance, step and callback rows: all of them, or a page
// (rows past the run's size are ignored). May throw on a damaged value.
void fill_from_rows(Run& run, const journal::StoredRun& rows);

}  // namespace corral::master
