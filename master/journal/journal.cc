#include "master/journal/journal.h"

#include <spdlog/spdlog.h>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <future>

#include "master/heap.h"
#include "shared/proc.h"

namespace corral::master::journal {
namespace {
constexpr size_t kMaxBatch = 50000;     // writes per transaction (one entry of rows may go over)
// Room for rows: an entry grows as a vector does up to kFewRows (most hold one or two: the rows
// of instances that end come between other writes). One that outgrows it is a burst (a dead
// worker's instances requeued) and gets room for kRowsPerEntry at once: more than the size
// glibc maps on its own (tune_heap, master/heap.h) when no free chunk that large is at hand.
// A burst then leaves only a short trail of outgrown buffers between the loop's live records;
// a long one took malloc_trim 24 to 42 ms to give back after a cancel (bench/master-stalls).
constexpr size_t kFewRows = 64;
constexpr size_t kRowsPerEntry = 2048;  // rows one entry of the queue carries at most
static_assert(kRowsPerEntry * sizeof(InstanceRow) > kHeapMapBytes);

// The writer thread runs this much nicer than the thread that made it (the loop's). It writes
// in batches and may fall behind for a while; the loop answers the API and the workers, and
// shares its process's place in the scheduler with it. When a worker's 50,000 instances move,
// the writer was the loop's largest rival for a CPU (bench/master-stalls --perf-sched).
constexpr int kWriterNicer = 5;

// The calling thread: named, so that `top -H` and perf tell it from the loop, and nicer.
void become_writer() {
  prctl(PR_SET_NAME, "corral-journal");
  const auto tid = static_cast<id_t>(gettid());
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) (void)setpriority(PRIO_PROCESS, tid, std::min(19, nice + kWriterNicer));
}

std::string describe(const WriteTag& tag) {
  if (tag.run.empty()) return "a write";
  if (tag.instance < 0) return "a write for run " + tag.run;
  return "a write for instance " + std::to_string(tag.instance) + " of run " + tag.run;
}
}  // namespace

Journal::Journal(uv_loop_t* loop, std::unique_ptr<Store> store, Options opts)
    : store_(std::move(store)), opts_(opts), async_(loop, [this] { on_async(); }) {
  async_.unref();  // the journal alone does not keep the loop running
  thread_ = std::thread([this] {
    become_writer();
    run();
  });
}

Journal::~Journal() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  async_.close();
}

void Journal::write(std::function<Status(Store&)> op, WriteTag tag) {
  enqueue(Op{std::move(op), std::move(tag), nullptr, nullptr, {}}, true);
}

void Journal::read(std::function<void(Store&)> read, std::function<void()> done) {
  enqueue(Op{nullptr, {}, std::move(read), std::move(done), {}}, false);
}

void Journal::read_committed(std::function<void(Store&)> read, std::function<void()> done) {
  enqueue(Op{nullptr, {}, std::move(read), std::move(done), {}, true}, false);
}

void Journal::flush() {
  std::promise<void> tried;
  enqueue(Op{nullptr, {}, [&tried](Store&) { tried.set_value(); }, nullptr, {}}, false);
  tried.get_future().wait();
}

// The journal's thread waits for the queue to be non-empty, then for the commit window or a
// full batch (run): only those two moments can end its wait. Waking it for every write would
// cost the loop a futex call and the thread a switch each, tens of thousands a second when a
// worker's instances move.
void Journal::enqueue(Op op, bool is_write) {
  bool wake;
  {
    std::lock_guard lk(mu_);
    queue_.push_back(std::move(op));
    if (is_write) health_.queued += 1;
    queue_items_ += 1;
    wake = queue_items_ == 1 || queue_items_ == kMaxBatch;
  }
  if (wake) cv_.notify_one();
}

void Journal::put_instance(InstanceRow row) {
  bool wake;
  {
    std::lock_guard lk(mu_);
    if (queue_.empty() || queue_.back().rows.empty() ||
        queue_.back().rows.size() == kRowsPerEntry) {
      queue_.emplace_back();
    }
    std::vector<InstanceRow>& rows = queue_.back().rows;
    if (rows.size() == kFewRows) rows.reserve(kRowsPerEntry);
    rows.push_back(std::move(row));
    health_.queued += 1;
    queue_items_ += 1;
    wake = queue_items_ == 1 || queue_items_ == kMaxBatch;
  }
  if (wake) cv_.notify_one();
}

Journal::Health Journal::health() const {
  std::lock_guard lk(mu_);
  return health_;
}

void Journal::run() {
  int final_tries = 0;
  for (;;) {
    std::deque<Op> taken;
    {
      std::unique_lock lk(mu_);
      bool failing = !pending_.empty();
      if (failing) {
        cv_.wait_for(lk, std::chrono::milliseconds(opts_.retry_ms), [this] { return stop_; });
      } else {
        cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
        // Group commit: let the loop add more before the transaction starts.
        cv_.wait_for(lk, std::chrono::milliseconds(opts_.commit_window_ms),
                     [this] { return stop_ || queue_items_ >= kMaxBatch; });
      }
      taken.swap(queue_);
      queue_items_ = 0;
      if (stop_ && taken.empty() && pending_.empty()) return;
    }
    // After one failure, this round only gathers; the retry comes later. A retry that commits
    // releases the reads held for it.
    bool ok = held_.empty() || commit_and_release();
    for (Op& op : taken) {
      if (op.write || !op.rows.empty()) {
        take(std::move(op));
        if (ok && pending_.size() >= kMaxBatch) ok = commit_and_release();
        continue;
      }
      if (ok) ok = commit_and_release();  // the writes queued before it are tried first
      if (op.committed && !ok) {
        held_.push_back(std::move(op));
      } else {
        run_read(op);
      }
    }
    if (ok) commit_and_release();
    bool stopping;
    {
      std::lock_guard lk(mu_);
      stopping = stop_;
    }
    if (stopping && !pending_.empty() && ++final_tries >= opts_.final_tries) {
      spdlog::error("journal: {} writes could not be saved before exit: {}", pending_.size(),
                    health().error);
      return;
    }
  }
}

void Journal::run_read(Op& op) {
  op.read(*store_);
  if (op.done) deliver(std::move(op.done));
}

bool Journal::commit_and_release() {
  if (!commit_pending()) return false;
  std::vector<Op> held;
  held.swap(held_);
  for (Op& op : held) run_read(op);  // they see every write queued before them, and more
  return true;
}

void Journal::take(Op&& op) {
  if (op.write) {
    pending_.push_back(Write{std::move(op.write), std::move(op.tag), {}});
    return;
  }
  for (InstanceRow& row : op.rows) {
    WriteTag tag{row.run_id, row.idx};
    pending_.push_back(Write{nullptr, std::move(tag), std::move(row)});
  }
}

// Commits pending_ as one transaction, less the writes that are wrong in themselves. Returns
// false when the batch is kept for a retry.
bool Journal::commit_pending() {
  if (pending_.empty()) return true;
  std::vector<Rejected> rejected;
  Status s = apply_batch();
  if (is_bad_write(s)) s = apply_one_by_one(rejected);
  if (!s) {
    note_failure(s);
    return false;
  }
  note_commit(rejected);
  return true;
}

// Rows queued one after another go to the store together (put_instances).
Status Journal::apply_batch() {
  Status s = store_->begin();
  std::vector<const InstanceRow*> rows;
  auto put_rows = [&] {
    Status r = rows.empty() ? Status::ok() : store_->put_instances(rows);
    rows.clear();
    return r;
  };
  for (size_t i = 0; s && i < pending_.size(); ++i) {
    if (!pending_[i].op) {
      rows.push_back(&pending_[i].row);
    } else if (s = put_rows(); s) {
      s = pending_[i].apply(*store_);
    }
  }
  if (s) s = put_rows();
  if (s) s = store_->commit();
  if (!s) store_->rollback();
  return s;
}

// Savepoints rather than a transaction per write: the batch still costs one commit (one sync
// of the disk), however many writes it holds. `rejected` is filled only if the batch commits;
// any failure other than a wrong write undoes the whole transaction, as in apply_batch().
Status Journal::apply_one_by_one(std::vector<Rejected>& rejected) {
  Status s = store_->begin();
  for (size_t i = 0; s && i < pending_.size(); ++i) {
    s = store_->savepoint();
    if (!s) break;
    Status w = pending_[i].apply(*store_);
    if (is_bad_write(w)) {
      rejected.push_back({i, w.message(), w.code() == Code::kAborted});
      s = store_->rollback_savepoint();
    } else {
      s = w ? store_->release_savepoint() : w;
    }
  }
  if (s) s = store_->commit();
  if (!s) {
    store_->rollback();
    rejected.clear();
  }
  return s;
}

void Journal::note_failure(const Status& s) {
  std::lock_guard lk(mu_);
  health_.failed_batches += 1;
  if (health_.ok) {
    health_.failing_since_ms = unix_ms_now();
    spdlog::error("journal: a write failed; {} writes are kept and retried every {} ms: {}",
                  pending_.size(), opts_.retry_ms, s.message());
  }
  health_.ok = false;
  health_.error = s.message();
}

// The batch committed, but for the writes in `rejected`: those are set aside for good.
void Journal::note_commit(const std::vector<Rejected>& rejected) {
  size_t fenced = 0;
  for (const Rejected& r : rejected) {
    if (r.fenced) {
      if (fenced++ == 0) spdlog::warn("journal: {} was fenced off: {}", describe(pending_[r.index].tag), r.error);
      continue;
    }
    spdlog::error("journal: {} was rejected and set aside, not to be retried: {}",
                  describe(pending_[r.index].tag), r.error);
  }
  {
    std::lock_guard lk(mu_);
    if (!health_.ok) {
      spdlog::info("journal: writing again after {} failed batches; {} writes saved",
                   health_.failed_batches, pending_.size() - rejected.size());
    }
    health_.ok = true;
    health_.error.clear();
    health_.failing_since_ms = 0;
    health_.committed += pending_.size() - rejected.size();
    health_.rejected_writes += rejected.size() - fenced;
    health_.fenced_writes += fenced;
    health_.queued -= pending_.size();
    health_.batches += 1;
    for (const Rejected& r : rejected) {
      if (r.fenced) continue;
      health_.last_rejection = r.error;
      completed_.push_back([this, tag = std::move(pending_[r.index].tag), error = r.error] {
        if (on_rejected_) on_rejected_(tag, error);
      });
    }
  }
  pending_.clear();
  if (!rejected.empty()) async_.send();
}

void Journal::deliver(std::function<void()> done) {
  {
    std::lock_guard lk(mu_);
    completed_.push_back(std::move(done));
  }
  async_.send();
}

void Journal::on_async() {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lk(mu_);
    ready.swap(completed_);
  }
  for (auto& fn : ready) fn();
}

}  // namespace corral::master::journal
