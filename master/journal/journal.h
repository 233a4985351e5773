// The journal's writer: the master's loop hands it writes and reads, a thread of its own
// applies them to the Store in order, so the loop never waits on the disk.
//
// Writes are grouped: the thread takes everything queued within a few milliseconds and
// commits it as one transaction. A batch that fails (disk full, read-only file system) is
// kept and retried every `retry_ms`, with new writes added behind it, so nothing queued is
// dropped while the daemon runs; the failure is logged and shown by health(). Every write
// must be idempotent (the store's upserts are), since a retried batch runs again.
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
#include "shared/uv/handle.h"

namespace corral::master::journal {

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
    uint64_t failed_batches = 0;   // transactions that failed since start
  };

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
  void write(std::function<Status(Store&)> op);
  // Queues a read that sees every write queued before it (once committed). `read` runs on the
  // writer thread, then `done` on the loop thread.
  void read(std::function<void(Store&)> read, std::function<void()> done);
  // Blocks until every write queued before the call has been tried once. For tests.
  void flush();

  Health health() const;

 private:
  struct Op {
    std::function<Status(Store&)> write;
    std::function<void(Store&)> read;
    std::function<void()> done;
  };
  void run();
  bool commit_pending();
  void deliver(std::function<void()> done);
  void on_async();

  std::unique_ptr<Store> store_;
  Options opts_;
  uv::Handle<uv_async_t> async_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  bool stop_ = false;
  Health health_;
  std::vector<std::function<void()>> completed_;  // reads' `done`, for the loop thread

  std::vector<std::function<Status(Store&)>> pending_;  // writer thread only
  std::thread thread_;
};

}  // namespace corral::master::journal
