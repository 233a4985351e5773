// An instance's record in the master (Runs, runs.h): its state, where it is, the steps it
// ended; and the table that holds a run's records. Loop thread only.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/ipc/checkpoint.h"

namespace corral::master {

#define CORRAL_INSTANCE_STATES(X) \
  X(kQueued, "queued")            \
  X(kRunning, "running")          \
  X(kPassed, "passed")            \
  X(kFailed, "failed")            \
  X(kErrored, "errored")          \
  X(kCancelled, "cancelled")

enum class InstanceState : uint8_t {
#define CORRAL_INSTANCE_ENUM(name, text) name,
  CORRAL_INSTANCE_STATES(CORRAL_INSTANCE_ENUM)
#undef CORRAL_INSTANCE_ENUM
};
constexpr size_t kInstanceStates = 6;
std::string_view to_string(InstanceState s);
std::optional<InstanceState> instance_state_from(std::string_view s);
inline bool is_terminal(InstanceState s) {
  return s != InstanceState::kQueued && s != InstanceState::kRunning;
}

struct StepRecord {
  uint32_t step = 0;
  std::string state;  // passed, failed, errored
  uint32_t attempts = 0;
  int64_t started_ms = 0, ended_ms = 0;
  int status = 0;         // last HTTP status, 0 when none
  int64_t until_ms = -1;  // poll steps: time until the condition held
  std::string reason;
  std::string url;      // the final URL, when redirects were followed
  uint64_t tls_us = 0;  // TLS handshakes its requests waited for
  std::string body;     // the start of the response of a step that failed on one
};

// What an instance gathers as it runs beyond its place: the reason it ended, why it was
// resumed, its variables, the position inside a step, the steps it ended. A record gets it when
// one of these is first written; an instance that only waits on its first step never does.
struct InstanceDetail {
  std::string reason;
  std::vector<std::string> resume_reasons;
  nlohmann::json vars;  // captured so far (wire form): what a resumed instance continues with
  // The exact position of the step in progress, when the worker sent one (a hand-back, or a
  // progress report of a step's counters): the next placement resumes from it. Cleared when
  // the step ends. Apart, so that the detail a resume reason makes stays small.
  std::unique_ptr<ipc::Checkpoint> checkpoint;
  std::vector<StepRecord> steps;
};

struct InstanceRecord {
  InstanceState state = InstanceState::kQueued;
  // The journal's row is behind: it changed here (a resume after its host was lost) and is
  // written whole when the instance is placed, in one write with its start.
  bool row_behind = false;
  int worker = -1;  // slot that runs it
  uint32_t next_step = 0;
  uint32_t resumes = 0;
  uint32_t crash_resumes = 0;  // resumes because the worker died (counted against the limit)
  int64_t started_ms = 0, ended_ms = 0;

  // The detail, read: an empty one when the record has none.
  const InstanceDetail& detail() const { return detail_ ? *detail_ : kNoDetail; }
  // The detail, to write: made when the record has none.
  InstanceDetail& make_detail() {
    if (!detail_) detail_ = std::make_unique<InstanceDetail>();
    return *detail_;
  }

 private:
  // Placing a million instances makes a million records: kept apart, the detail does not
  // make each of them 150 bytes to zero and fault in (instance_table_test.cc checks the size).
  std::unique_ptr<InstanceDetail> detail_;
  static inline const InstanceDetail kNoDetail{};
};

// The records of one run's instances. An instance gets its record when it is first placed (or
// read back from the journal); before that it is queued, or cancelled with its run, and costs
// nothing here: a run of a million instances that wait in the queue holds no record at all.
// Records live in pages of kPage that never move, so growing the table does not copy records
// already held (a copy of half a million would hold the loop for tens of milliseconds).
class InstanceTable {
 public:
  static constexpr uint32_t kPage = 1024;

  // The record of instance `i`, made (queued, never started) if it had none.
  InstanceRecord& at(uint32_t i) {
    const size_t p = i / kPage;
    if (p >= pages_.size()) pages_.resize(p + 1);
    if (!pages_[p]) pages_[p] = std::make_unique<Page>();
    return (*pages_[p])[i % kPage];
  }
  // The record of instance `i`, or nullptr when it has none.
  const InstanceRecord* find(uint32_t i) const {
    const size_t p = i / kPage;
    return p < pages_.size() && pages_[p] ? &(*pages_[p])[i % kPage] : nullptr;
  }
  InstanceRecord* find(uint32_t i) {
    return const_cast<InstanceRecord*>(std::as_const(*this).find(i));
  }
  // The first instance at or after `i` that may have a record (the start of the next page
  // held when `i`'s has none); `end` when there is none below it.
  uint32_t next_held(uint32_t i, uint32_t end) const {
    for (size_t p = i / kPage; p < pages_.size(); ++p) {
      if (!pages_[p]) continue;
      return std::min(end, std::max(i, static_cast<uint32_t>(p * kPage)));
    }
    return end;
  }
  // Calls fn(index, record) for every record held, in index order, below `end`.
  template <class Fn>
  void each(uint32_t end, Fn&& fn) {
    for (size_t p = 0; p < pages_.size(); ++p) {
      for (uint32_t k = 0; pages_[p] && k < kPage && p * kPage + k < end; ++k) {
        fn(static_cast<uint32_t>(p * kPage + k), (*pages_[p])[k]);
      }
    }
  }
  template <class Fn>
  void each(uint32_t end, Fn&& fn) const {
    for (size_t p = 0; p < pages_.size(); ++p) {
      for (uint32_t k = 0; pages_[p] && k < kPage && p * kPage + k < end; ++k) {
        fn(static_cast<uint32_t>(p * kPage + k), std::as_const((*pages_[p])[k]));
      }
    }
  }
  // Records held, counting a whole page for each page begun.
  size_t held() const {
    size_t n = 0;
    for (const auto& p : pages_) n += p ? kPage : 0;
    return n;
  }
  void clear() { std::vector<std::unique_ptr<Page>>().swap(pages_); }

 private:
  using Page = std::array<InstanceRecord, kPage>;
  std::vector<std::unique_ptr<Page>> pages_;
};

}  // namespace corral::master
