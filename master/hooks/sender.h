// The master's hooks: each event fired becomes one delivery per hook configured for it, run
// without ever blocking the loop (webhook.h, command.h) and bounded on every side: at most
// `max_in_flight` deliveries run at once, at most `max_queued` wait, and when the queue is full
// the oldest waiting one is dropped. Nothing is kept across a restart of the master.
//
// Each delivery ends once as ok, failed or dropped: it is reported through OnOutcome (for
// /metrics) and logged, a failure or a drop at warn level naming the event, the hook (its URL
// without query, or its argv[0]) and the reason. Header values are never logged.
//
// Loop thread only. The loop keeps running while deliveries run; stop() bounds how long.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "config/hooks.h"
#include "master/hooks/delivery.h"
#include "shared/uv/timer.h"

namespace corral::master {

#define CORRAL_HOOK_OUTCOMES(X) \
  X(kOk, "ok")                  \
  X(kFailed, "failed")          \
  X(kDropped, "dropped")

enum class HookOutcome {
#define CORRAL_HOOK_OUTCOME_ENUM(name, text) name,
  CORRAL_HOOK_OUTCOMES(CORRAL_HOOK_OUTCOME_ENUM)
#undef CORRAL_HOOK_OUTCOME_ENUM
};
std::string_view to_string(HookOutcome o);

class HookSender {
 public:
  struct Limits {
    size_t max_in_flight = 16;
    size_t max_queued = 1000;
  };
  using OnOutcome = std::function<void(config::HookEvent, HookOutcome)>;

  HookSender(uv_loop_t* loop, Limits limits, OnOutcome on_outcome);
  // Deliveries still running are abandoned: a command keeps running, unwatched.
  ~HookSender();
  HookSender(const HookSender&) = delete;
  HookSender& operator=(const HookSender&) = delete;

  // The hooks to run from now on (start-up, a reload). Deliveries under way go on.
  void set_hooks(config::Hooks hooks);
  // Queues one delivery of `payload` per hook of `event`; nothing when it has none. After
  // stop()'s grace has run out, each is dropped at once.
  void fire(config::HookEvent event, const nlohmann::json& payload);
  // The daemon is stopping: deliveries go on, queued ones start as room frees up, for at most
  // `grace_ms`; then the queue is dropped and the running ones are aborted (delivery.h), which
  // ends them within about a second. A second call may shorten the grace.
  void stop(uint64_t grace_ms);

  size_t in_flight() const { return running_.size(); }
  size_t queued() const { return queue_.size(); }

 private:
  struct Job {
    config::HookEvent event;
    config::Hook hook;
    std::shared_ptr<const std::string> payload;  // one JSON text for all the event's hooks
  };
  struct Running {
    Job job;
    std::unique_ptr<Delivery> delivery;
  };
  void pump();
  void start(Job job);
  void on_done(uint64_t id, const Status& result);
  void report(const Job& job, HookOutcome outcome, const std::string& why);
  void give_up();
  void close_if_idle();

  uv_loop_t* loop_;
  Limits limits_;
  OnOutcome on_outcome_;
  config::Hooks hooks_;
  std::deque<Job> queue_;
  std::map<uint64_t, Running> running_;
  uint64_t next_id_ = 1;
  std::unique_ptr<uv::Timer> grace_;  // while stopping with deliveries left
  bool stopping_ = false;
  bool gave_up_ = false;
  uint64_t stop_deadline_ms_ = 0;  // monotonic
};

}  // namespace corral::master
