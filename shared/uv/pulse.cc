#include "shared/uv/pulse.h"

#include <uv.h>

namespace corral::uv {
namespace {

struct Pulse {
  std::function<void()> beat;
  uint64_t due_ns = 0;
  uint32_t calls = 0;
  bool beating = false;
};

Pulse& state() {
  thread_local Pulse p;
  return p;
}

}  // namespace

void set_pulse(std::function<void()> beat) { state().beat = std::move(beat); }

void pulse_due(uint64_t due_ns) { state().due_ns = due_ns; }

void pulse() {
  Pulse& p = state();
  if ((++p.calls & 63) != 0 || !p.beat || p.beating || p.due_ns == 0) return;
  if (uv_hrtime() < p.due_ns) return;
  p.beating = true;
  p.beat();
  p.beating = false;
}

}  // namespace corral::uv
