// The journal's storage, behind one interface: a SQLite file (sqlite_store.cc, the embedded
// default) or a PostgreSQL database (pg_store.cc), with the same schema and the same SQL
// (master/journal/sql.h).
//
// A Store is used by one thread at a time. Every call returns a Status naming the statement
// and the database's own message; nothing throws. A write that fails says whose fault it was:
//  - kInvalidArgument: the write itself is wrong (a constraint it violates, a value of the
//    wrong type or too big). It would fail again on any disk, so trying it again cannot help;
//    is_bad_write() tells. The message is the statement and the database's message, e.g.
//    "put_instance: NOT NULL constraint failed: instances.state".
//  - kAborted: the write is about instances this host no longer holds (a PostgreSQL journal
//    shared by hosts, docs/cluster.md): another host took them over. It changed nothing, and
//    must not be tried again.
//  - kIo: the database cannot take writes now (disk full, I/O error, read-only or locked
//    file, out of memory, a damaged file, or any failure the store cannot place). The same
//    write may well succeed later. The message also names the file.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "master/journal/rows.h"
#include "shared/status.h"

namespace corral::master::journal {

class Store {
 public:
  virtual ~Store() = default;

  virtual Status begin() = 0;
  virtual Status commit() = 0;
  // Ends the transaction, undoing it; nothing to do when none is open.
  virtual void rollback() = 0;
  // Inside a transaction: marks a point that rollback_savepoint() undoes back to, so that one
  // write can fail without losing the others. release_savepoint() keeps what was done since
  // and forgets the mark; rollback_savepoint() undoes it and forgets the mark too.
  virtual Status savepoint() = 0;
  virtual Status release_savepoint() = 0;
  virtual Status rollback_savepoint() = 0;

  // Inserts or replaces the run row; the run-number sequence never goes back.
  virtual Status put_run(const RunRow& run) = 0;
  // Inserts or replaces an instance row.
  virtual Status put_instance(const InstanceRow& row) = 0;
  // put_instance() of each row, in order (a row written twice ends as its later write). The
  // journal hands it the rows queued one after another; PostgreSQL writes them in a few
  // statements instead of one each.
  virtual Status put_instances(std::span<const InstanceRow* const> rows) {
    for (const InstanceRow* r : rows) {
      if (Status s = put_instance(*r); !s) return s;
    }
    return Status::ok();
  }
  // These instances were placed on a worker: state running, started at `started_ms` unless
  // they had started before.
  virtual Status mark_running(const std::string& run_id, const std::vector<uint32_t>& idx,
                              int64_t started_ms) = 0;
  // Instances that were running on a host that died, placed here: running again, with their
  // resumes as their records now count them. The rest of each row (vars, checkpoint, steps
  // passed) is what this host read to resume them, and is left as it is.
  struct Resumed {
    uint32_t idx = 0;
    int64_t resumes = 0;
    std::string resume_reasons;  // JSON array, as InstanceRow has it
  };
  virtual Status mark_resumed(const std::string& run_id, const std::vector<Resumed>& rows) = 0;
  // Adds a step to an instance's history (again: no-op).
  virtual Status put_step(const StepRow& row) = 0;
  // Records a call of an instance's callback step (again for the same step: no-op).
  virtual Status put_callback(const CallbackRow& row) = 0;
  // The run finished: every instance that is still queued or running is cancelled.
  virtual Status finish_run(const std::string& run_id, int64_t finished_ms, bool cancelled,
                            const std::string& summary) = 0;
  // Records why a run is quarantined ("": it is not any more).
  virtual Status set_quarantine(const std::string& run_id, const std::string& reason) = 0;
  // Forgets a run and everything about its instances.
  virtual Status delete_run(const std::string& run_id) = 0;
  // Gives the space of deleted rows back to the file system, as far as the store can.
  virtual Status reclaim() = 0;

  // Hosts sharing a PostgreSQL journal (docs/cluster.md); SQLite has no use for them.
  // From now on, writes about instances (put_instance, mark_running, put_step) are this host's
  // at registration `epoch`: each fails with kAborted, changing nothing, once the hosts table
  // no longer gives this host that epoch (another host declared it dead, or it registered
  // again). The check holds a lock on the host's row until the transaction ends, so a host
  // declared dead meanwhile waits for it: what committed before is seen by whoever takes the
  // instances over. Epoch 0: no check.
  virtual void set_fence(const std::string& /*host*/, int64_t /*epoch*/) {}
  // This host finished every instance of its range of a run that starts at `lo` (claimed at
  // the fence's epoch: a range claimed in an earlier life is left alone).
  virtual Status claim_done(const std::string& /*run_id*/, uint32_t /*lo*/) {
    return Status::ok();
  }
  // Whether every range of the run is done (so the run is finished, by whichever host sees it).
  virtual Result<bool> run_complete(const std::string& /*run_id*/) { return false; }
  // The run's end, summed up by the database, without reading its rows back.
  virtual Result<RunTally> tally_run(const std::string& run_id) {
    return Status(Code::kInternal, "run " + run_id + ": this journal does not sum runs up");
  }
  // The host at `epoch` leaves the cluster (its daemon stops): its epoch goes up (fencing off
  // anything it would still write), its heartbeat is made old (it is listed dead at once),
  // and its ranges are released for the other hosts to claim now, after every write queued
  // before this one.
  virtual Status leave(const std::string& /*host*/, int64_t /*epoch*/) { return Status::ok(); }

  // Schedules (docs/schedules.md). Inserts or replaces a schedule's row (its last_* fields are
  // not written: they come from its fires).
  virtual Status put_schedule(const ScheduleRow& row) = 0;
  // Pauses or resumes a schedule and sets the time after which its ticks are still to come.
  // No-op when there is no such schedule.
  virtual Status set_schedule(const std::string& name, bool paused, int64_t after_ms) = 0;
  // Forgets a schedule and its fires.
  virtual Status delete_schedule(const std::string& name) = 0;
  // Records that a schedule's tick fired as a run, and moves the schedule's after_ms up to the
  // tick; keeps the schedule's newest 100 fires. Write it in the same transaction as the run's
  // put_run(): then a tick is recorded exactly when its run is. A tick fires once: the key
  // (schedule, tick_ms) is unique, and a tick already recorded for another run fails with
  // kInvalidArgument ("put_fire: schedule S already fired its tick at T as run R"), which undoes
  // the run with it; the same row again is a no-op. No-op when there is no such schedule (it
  // was removed since).
  virtual Status put_fire(const FireRow& row) = 0;
  // Every schedule, by name, each with its newest fire.
  virtual Result<std::vector<ScheduleRow>> schedules() = 0;

  // Load tests that ended (master/kept_loads.h). Inserts or replaces a test's row.
  virtual Status put_load_test(const LoadTestRow& row) = 0;
  // Forgets a kept test (none of that id: no-op).
  virtual Status delete_load_test(const std::string& id) = 0;
  // The tests `host` ran, oldest first, each without its detail.
  virtual Result<std::vector<LoadTestRow>> load_tests(const std::string& host) = 0;
  // One test's detail; kNotFound when there is no such test.
  virtual Result<std::string> load_test_detail(const std::string& id) = 0;

  // The counters of ids, kept in the meta table: runs (r<N>-xxxx) and load tests (l<N>).
  static constexpr std::string_view kRunSeq = "run_seq";
  static constexpr std::string_view kLoadSeq = "load_seq";
  // The next number of `counter` (kRunSeq, kLoadSeq): one more than any number used, deleted
  // runs and ended load tests included; 1 when none was. put_run() uses its run's number.
  virtual Result<uint64_t> next_seq(std::string_view counter) = 0;
  // Records that numbers of `counter` below `next` are used; a lower `next` changes nothing.
  virtual Status bump_seq(std::string_view counter, uint64_t next) = 0;
  // Every run row, oldest first.
  virtual Result<std::vector<RunRow>> runs() = 0;
  // One run with its instances, steps and callbacks; kNotFound when there is no such run.
  virtual Result<StoredRun> load_run(const std::string& run_id) = 0;
  // The same, with only the instances of index from..to-1 and their steps and callbacks: a
  // page of a large run.
  virtual Result<StoredRun> load_run_page(const std::string& run_id, uint32_t from,
                                          uint32_t to) = 0;
};

// Whether a failed write is wrong in itself or fenced off (see above), rather than the store
// unable to write: either way it must not be tried again.
inline bool is_bad_write(const Status& s) {
  return s.code() == Code::kInvalidArgument || s.code() == Code::kAborted;
}

// Opens (creating when needed) the SQLite journal at `path` in WAL mode and brings its schema
// to the current version. `max_pages` > 0 caps the file size in pages, which makes writes fail
// as on a full disk (for tests). Fails with a message that names the path.
Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path, int64_t max_pages = 0);

// Connects to the PostgreSQL database at `url` (postgresql://user:password@host:port/db?...,
// libpq's URI form) and brings its schema to the current version. Fails with kIo naming the
// database (its password hidden) when it cannot connect. `pipeline`: a transaction's writes are
// sent in libpq's pipeline mode (false: each waits for its answer; for comparison).
Result<std::unique_ptr<Store>> open_postgresql_store(const std::string& url, bool pipeline = true);

// Whether `spec` names a PostgreSQL database (postgresql:// or postgres://) rather than a
// SQLite file.
bool is_postgresql(const std::string& spec);
// `spec` with any password in it replaced by "***": how logs, /metrics and hooks name it.
std::string redact_journal(const std::string& spec);
// The store `spec` names: open_postgresql_store for a PostgreSQL URL, else open_sqlite_store.
Result<std::unique_ptr<Store>> open_journal_store(const std::string& spec, int64_t max_pages = 0);

}  // namespace corral::master::journal
