// A loop that is busy is not hung. The worker's heartbeat is a timer on its loop; when the loop
// has more ready I/O than it can handle (a load test past what the machine can do), one turn
// can run for seconds and the timer fires late, and the supervisor would take a working loop
// for a hung one and kill it. So code that runs often on the loop (each instance's callback)
// calls pulse(), and once the beat is overdue, the beat runs from there. A loop stuck inside
// one callback never pulses, and still misses its heartbeats. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>

namespace corral::uv {

// `beat` runs from pulse() when uv_hrtime() has passed `due_ns`; it sets the next due time
// itself (pulse_due). An empty `beat` turns pulses off.
void set_pulse(std::function<void()> beat);
void pulse_due(uint64_t due_ns);
// Cheap: a counter, and a clock read every 64th call.
void pulse();

}  // namespace corral::uv
