// What the parts that serve the control API (runs, schedules, callbacks, load tests) need of
// the workers, which the daemon drives: a frame to one worker or to every worker, placement of
// the queue soon, whether the daemon is stopping, the URL base of callback tokens, which workers
// are ready, and how many are wanted. Daemon implements it; the parts see the workers through
// nothing else. Loop thread only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/ipc/codec.h"
#include "shared/ipc/protocol.h"

namespace corral::master {

class WorkerLink {
 public:
  // Sends to the worker of `slot`; false when it has none, or it cannot be written to.
  virtual bool send_to(int slot, ipc::MessageType type, const ipc::Payload& payload) = 0;
  bool send_to(int slot, ipc::MessageType type, const nlohmann::json& payload) {
    return send_to(slot, type, ipc::Payload(payload));
  }
  // Sends to every current worker (a run's cancel: each stops what it holds of the run).
  virtual void send_to_all(ipc::MessageType type, const nlohmann::json& payload) = 0;
  // Queued instances are placed in a later turn of the loop (never in the caller's).
  virtual void place_soon() = 0;
  // The daemon is stopping: it takes no new work.
  virtual bool stopping() const = 0;
  // The URL that callback steps' tokens go under, for workers of the current image; "" when
  // the API cannot be reached over TCP and no callback_base is set.
  virtual std::string callback_base() const = 0;
  // The slots whose worker is ready, in slot order.
  virtual std::vector<int> ready_workers() const = 0;
  // How many workers are wanted; a new count is carried out soon (workers start or stop).
  virtual int wanted() const = 0;
  virtual void set_wanted(int n) = 0;

 protected:
  ~WorkerLink() = default;
};

}  // namespace corral::master
