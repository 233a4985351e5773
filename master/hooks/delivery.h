// One hook's delivery in flight: a webhook's tries (webhook.h) or a command's run (command.h).
// Its end is reported once, through `Done`, on the loop thread. Loop thread only.
#pragma once

#include <functional>

#include "shared/status.h"

namespace corral::master {

class Delivery {
 public:
  // How the delivery ended: OK, or why not ("HTTP 500 (4 tries)", "exit 3", "timed out after
  // 10s: killed"). `done` may destroy the Delivery.
  using Done = std::function<void(Status result)>;

  virtual ~Delivery() = default;
  // The daemon is stopping and can wait no longer: end now. A command is killed, a webhook's
  // try in flight is abandoned (within about a second) and no other try is made. `done` still
  // comes, possibly before abort() returns.
  virtual void abort() = 0;
};

}  // namespace corral::master
