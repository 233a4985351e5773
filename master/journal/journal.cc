#include "master/journal/journal.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <future>

#include "shared/proc.h"

namespace corral::master::journal {
namespace {
constexpr size_t kMaxBatch = 50000;  // writes per transaction at most
}

Journal::Journal(uv_loop_t* loop, std::unique_ptr<Store> store, Options opts)
    : store_(std::move(store)), opts_(opts) {
  uv_async_init(loop, async_.get(), [](uv_async_t* a) {
    if (auto* self = uv::owner_of<Journal>(a)) self->on_async();
  });
  async_.set_live(this);
  uv_unref(async_.base());  // the journal alone does not keep the loop running
  thread_ = std::thread([this] { run(); });
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

void Journal::write(std::function<Status(Store&)> op) {
  {
    std::lock_guard lk(mu_);
    queue_.push_back(Op{std::move(op), nullptr, nullptr});
    health_.queued += 1;
  }
  cv_.notify_one();
}

void Journal::read(std::function<void(Store&)> read, std::function<void()> done) {
  {
    std::lock_guard lk(mu_);
    queue_.push_back(Op{nullptr, std::move(read), std::move(done)});
  }
  cv_.notify_one();
}

void Journal::flush() {
  std::promise<void> tried;
  {
    std::lock_guard lk(mu_);
    queue_.push_back(Op{nullptr, [&tried](Store&) { tried.set_value(); }, nullptr});
  }
  cv_.notify_one();
  tried.get_future().wait();
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
                     [this] { return stop_ || queue_.size() >= kMaxBatch; });
      }
      taken.swap(queue_);
      if (stop_ && taken.empty() && pending_.empty()) return;
    }
    bool ok = true;  // after one failure, this round only gathers; the retry comes later
    for (Op& op : taken) {
      if (op.write) {
        pending_.push_back(std::move(op.write));
        if (ok && pending_.size() >= kMaxBatch) ok = commit_pending();
        continue;
      }
      if (ok) ok = commit_pending();  // a read sees every write queued before it
      op.read(*store_);
      if (op.done) deliver(std::move(op.done));
    }
    if (ok) commit_pending();
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

bool Journal::commit_pending() {
  if (pending_.empty()) return true;
  Status s = store_->begin();
  for (size_t i = 0; s && i < pending_.size(); ++i) s = pending_[i](*store_);
  if (s) s = store_->commit();
  if (!s) store_->rollback();
  std::lock_guard lk(mu_);
  if (!s) {
    health_.failed_batches += 1;
    if (health_.ok) {
      health_.failing_since_ms = unix_ms_now();
      spdlog::error("journal: a write failed; {} writes are kept and retried every {} ms: {}",
                    pending_.size(), opts_.retry_ms, s.message());
    }
    health_.ok = false;
    health_.error = s.message();
    return false;
  }
  if (!health_.ok) {
    spdlog::info("journal: writing again after {} failed batches; {} writes saved",
                 health_.failed_batches, pending_.size());
  }
  health_.ok = true;
  health_.error.clear();
  health_.failing_since_ms = 0;
  health_.committed += pending_.size();
  health_.queued -= pending_.size();
  health_.batches += 1;
  pending_.clear();
  return true;
}

void Journal::deliver(std::function<void()> done) {
  {
    std::lock_guard lk(mu_);
    completed_.push_back(std::move(done));
  }
  uv_async_send(async_.get());
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
