// The journal's writer: the master's loop hands it writes and reads, a thread of its own
// applies them to the Store in order, so the loop never waits on the disk.
//
// Writes are grouped: the thread takes everything queued within a few milliseconds and
// commits it as one transaction. What happens when a batch fails depends on whose fault it
// was (see Store):
//  - The store cannot write now (kIo: disk full, read-only file system, I/O error, locked):
//    the batch is kept and retried every `retry_ms`, with new writes added behind it, so
//    nothing queued is dropped while the daemon runs; the failure is logged and shown by
//    health(). Every write must be idempotent (the store's upserts are): a retried batch runs
//    again.
//  - A write is wrong in itself (kInvalidArgument, from the store, such as a constraint it
//    violates, or returned by the write op itself): the batch runs again at once, in order,
//    in one transaction still but each write inside a savepoint of its own. The good writes
//    commit together; each wrong one is undone alone and set aside: it is never retried, is
//    logged once with the store's message, counted in health().rejected_writes, and handed to
//    the OnRejected callback with the tag it was written with. The writes behind it are not
//    held up. Should that second run fail for any other reason (the disk filled up
//    meanwhile), the whole batch is kept as above and nothing is set aside yet.
//  - A write is fenced off (kAborted: its instances belong to another host now, see
//    Store::set_fence): it is set aside as above, but counted in health().fenced_writes and not
//    handed to OnRejected: the instance is not this host's to end.
//
// Construct, use and destroy on the loop thread. The destructor writes what is still queued
// (giving a failing batch a few more tries) and stops the thread.
#pragma once

#include <uv.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "master/journal/store.h"
#include "shared/uv/async.h"

namespace corral::master::journal {

// What a write is about, handed back if the write is set aside, so that its owner can tell
// which run or instance lost a write.
struct WriteTag {
  std::string run;        // the run's id; empty for a write given without a tag
  int64_t instance = -1;  // the instance's index; -1 when the write is not about one instance
};

class Journal {
 public:
  struct Options {
    uint64_t commit_window_ms = 5;  // how long the thread gathers writes into one batch
    uint64_t retry_ms = 1000;       // how often a failed batch is tried again
    int final_tries = 3;            // tries for a failing batch when the journal closes
  };
  struct Health {
    bool ok = true;
    std::string error;             // the last failure, while failing
    int64_t failing_since_ms = 0;  // Unix ms of the first failure of the current streak
    uint64_t queued = 0;           // writes not committed yet (queued or in a failing batch)
    uint64_t committed = 0;        // writes committed since start
    uint64_t batches = 0;          // transactions committed since start
    uint64_t failed_batches = 0;   // transactions that failed and were kept for a retry
    uint64_t rejected_writes = 0;  // writes set aside as wrong in themselves since start
    uint64_t fenced_writes = 0;    // writes set aside as fenced off since start
    std::string last_rejection;    // the store's message for the latest of them
  };
  // A write was set aside: the tag it was written with and the store's message, e.g.
  // "put_instance: NOT NULL constraint failed: instances.state".
  using OnRejected = std::function<void(const WriteTag& tag, const std::string& error)>;

  Journal(uv_loop_t* loop, std::unique_ptr<Store> store, Options opts);
  Journal(uv_loop_t* loop, std::unique_ptr<Store> store) : Journal(loop, std::move(store), {}) {}
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Runs `fn` on the store right now, on the caller's thread. Only before the first write
  // (start-up loading): afterwards the store belongs to the writer thread.
  template <typename Fn>
  auto load_now(Fn&& fn) {
    return fn(*store_);
  }

  // Queues a write. It runs on the writer thread, in order with every other write and read.
  // `op` returns the Store's failure, or kInvalidArgument for a write it finds wrong itself.
  // `tag` says what the write is about, for the OnRejected callback.
  void write(std::function<Status(Store&)> op, WriteTag tag = {});
  // Queues Store::put_instance(row), as write() would with the tag {row.run_id, row.idx}. Rows
  // queued one after another share one entry of the queue: moving 50,000 instances costs the
  // loop no allocation per row but the row's own.
  void put_instance(InstanceRow row);
  // Queues a read that runs once every write queued before it was tried: committed, or, when
  // the store failed, kept for a retry (health() says so) — the read then does not see those.
  // This is what answers the API while the database is away. `read` runs on the writer thread,
  // then `done` on the loop thread.
  void read(std::function<void(Store&)> read, std::function<void()> done);
  // The same, run only once every write queued before it is committed: held while the store
  // fails (for as long as it fails), for a read that must see them, such as whether a run
  // ended or what a host wrote before it registers again.
  void read_committed(std::function<void(Store&)> read, std::function<void()> done);
  // Blocks until every write queued before the call has been tried once. For tests.
  void flush();

  // Sets the callback for writes set aside (none by default: they are logged and counted).
  // It runs on the loop thread, once per write, in the order of the writes, after the good
  // writes of its batch committed and before the `done` of any read queued after the write.
  // It may queue writes (a write about the same row may be set aside again) but must not
  // destroy the Journal. Writes set aside while the journal closes are only logged. Loop thread.
  void set_on_rejected(OnRejected fn) { on_rejected_ = std::move(fn); }

  Health health() const;

 private:
  struct Op {
    std::function<Status(Store&)> write;
    WriteTag tag;
    std::function<void(Store&)> read;
    std::function<void()> done;
    std::vector<InstanceRow> rows;  // put_instance's rows, each a write of its own
    bool committed = false;         // read_committed()
  };
  // One write: `op`, or else put_instance(row).
  struct Write {
    std::function<Status(Store&)> op;
    WriteTag tag;
    InstanceRow row;
    Status apply(Store& store) const { return op ? op(store) : store.put_instance(row); }
  };
  struct Rejected {
    size_t index;  // in pending_
    std::string error;
    bool fenced = false;
  };
  void enqueue(Op op, bool is_write);
  void take(Op&& op);  // a write or rows into pending_
  void run();
  bool commit_pending();
  Status apply_batch();
  Status apply_one_by_one(std::vector<Rejected>& rejected);
  void note_failure(const Status& s);
  void note_commit(const std::vector<Rejected>& rejected);
  void deliver(std::function<void()> done);
  void run_read(Op& op);
  bool commit_and_release();  // commit_pending(), then the held reads if it committed
  void on_async();

  std::unique_ptr<Store> store_;
  Options opts_;
  uv::Async async_;  // the writer thread wakes the loop with it

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  size_t queue_items_ = 0;  // entries in queue_, each row counted
  bool stop_ = false;
  Health health_;
  std::vector<std::function<void()>> completed_;  // reads' `done` and rejections, for the loop

  OnRejected on_rejected_;      // loop thread only
  std::vector<Write> pending_;  // writer thread only
  std::vector<Op> held_;        // read_committed()s waiting for pending_ to commit; writer only
  std::thread thread_;
};

}  // namespace corral::master::journal
