// Which instance a worker's loop is running code for right now, kept in a small memory page
// the master and the worker share (a memfd the master creates and passes as the worker's
// fd 4). It costs the worker two stores per callback. When a worker dies, the master reads the
// page: if the loop was inside an instance's code (a crash, or a hang in it), that instance is
// the one to blame, and only its own count of resumes-after-a-death goes up, so one poisonous
// instance ends `errored` while the instances beside it go on.
//
// The page is the contract: both sides use this struct and nothing else.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace corral::ipc {

constexpr int kInHandFd = 4;

struct InHand {
  std::atomic<uint32_t> busy;  // 1 while the worker runs code for (run, index)
  uint32_t index;
  uint32_t run_len;
  char run[52];

  // Worker side.
  void enter(const std::string& run_id, uint32_t i) {
    run_len = static_cast<uint32_t>(run_id.copy(run, sizeof(run)));
    index = i;
    busy.store(1, std::memory_order_release);
  }
  void leave() { busy.store(0, std::memory_order_release); }

  // Master side, after the worker is gone: the instance it was running code for, if any.
  std::optional<std::pair<std::string, uint32_t>> culprit() const {
    if (busy.load(std::memory_order_acquire) != 1 || run_len > sizeof(run)) return std::nullopt;
    return std::make_pair(std::string(run, run_len), index);
  }
};
static_assert(sizeof(InHand) == 64);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// Maps the page behind `fd` (created with create_in_hand() by the master). nullptr on failure.
InHand* map_in_hand(int fd);
void unmap_in_hand(InHand* page);
// Master: a new zeroed page and its fd (close-on-exec; the spawn passes it explicitly).
// Returns -1 on failure.
int create_in_hand();

// Sets the page for the duration of one callback.
class InHandScope {
 public:
  InHandScope(InHand* page, const std::string& run_id, uint32_t index) : page_(page) {
    if (page_) page_->enter(run_id, index);
  }
  ~InHandScope() {
    if (page_) page_->leave();
  }
  InHandScope(const InHandScope&) = delete;
  InHandScope& operator=(const InHandScope&) = delete;

 private:
  InHand* page_;
};

}  // namespace corral::ipc
