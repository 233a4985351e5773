// Placing instances on workers: each goes to the least-loaded ready worker that is under the
// per-worker concurrency limit; the rest wait in the master. Dispatch is incremental: pump()
// places at most `budget` instances per call, so a submission of 100,000 instances never
// holds the loop for long. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "master/runs.h"
#include "shared/ipc/protocol.h"

namespace corral::master {

class Dispatcher {
 public:
  // Sends a frame to a worker; false when it cannot take it (pipe gone or backed up).
  using Send = std::function<bool(int slot, ipc::MessageType type, const nlohmann::json& payload)>;

  Dispatcher(Runs& runs, Send send, uint32_t per_worker_limit, uint32_t chunk = 500)
      : runs_(runs), send_(std::move(send)), limit_(per_worker_limit), chunk_(chunk) {}

  // A worker that said ready may take work; a worker that is stopping, draining or gone may not.
  void worker_ready(int slot);
  void worker_gone(int slot);
  // One of `slot`'s instances ended.
  void instance_done(int slot);
  // Places up to `budget` instances. Returns true when more could be placed right away.
  bool pump(size_t budget);

  uint32_t load(int slot) const;
  size_t capacity() const;  // instances the ready workers could still take

 private:
  struct Worker {
    uint32_t load = 0;
    std::set<std::string> defined;  // runs this worker process knows
  };
  int least_loaded() const;
  bool place(Run& run, int slot, Worker& w, size_t budget, size_t& placed);

  Runs& runs_;
  Send send_;
  uint32_t limit_;
  uint32_t chunk_;
  std::map<int, Worker> workers_;
};

}  // namespace corral::master
