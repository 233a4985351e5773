// Blocking work on libuv's thread pool, its result handed back on the loop.
#pragma once

#include <uv.h>

#include <functional>

#include "shared/status.h"

namespace corral::uv {

// Runs `work` on a thread of the pool, then `done` on the loop's thread. Fails when libuv
// cannot queue it (neither runs then). The loop does not end while the work is pending.
Status queue_work(uv_loop_t* loop, std::function<void()> work, std::function<void()> done);

}  // namespace corral::uv
