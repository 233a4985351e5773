// The host's lease in the worker (Engine::set_lease). The master fences its host off when the
// lease ends (master/cluster/hosts.h), by stopping the instances on its workers; but a master
// whose loop is late, or stopped, would tell them late or never, while another host may take
// the instances over once the lease has ended. So each worker holds the lease too, and checks
// it, by the clock, at the two moments an instance acts on the world: when a step starts, and
// when its request is built.
#include <spdlog/spdlog.h>

#include "shared/proc.h"
#include "worker/engine/engine.h"
#include "worker/engine/instance.h"

namespace corral::worker {

bool Engine::leased(Instance& in, Held then) {
  if (lease_until_ms_ == ipc::kNoLease || in.run->sink != nullptr) return true;
  if (monotonic_ms() < lease_until_ms_) return true;
  if (held_.empty()) {
    spdlog::warn(
        "the host's lease ended: its instances wait until it is renewed or they are "
        "stopped");
  }
  if (in.held == Held::kNo) held_.push_back(in.serial);
  in.held = then;
  return false;
}

void Engine::set_lease(uint64_t until_ms) {
  lease_until_ms_ = until_ms;
  if (held_.empty() || until_ms <= monotonic_ms()) return;
  std::vector<uint64_t> held;
  held.swap(held_);
  size_t going = 0;
  for (uint64_t serial : held) {
    // (One cancelled, or handed back, meanwhile is gone.)
    with_instance(serial, "a renewed lease", [this, &going](Instance& in) {
      const Held then = in.held;
      in.held = Held::kNo;
      ++going;
      if (then == Held::kRunStep) {
        run_step(in);
      } else if (then == Held::kSend) {
        send(in);
      }
    });
  }
  if (going > 0) spdlog::info("the host's lease was renewed: {} held instances go on", going);
}

}  // namespace corral::worker
