// The master's heap under retention. The master holds runs for minutes to days and frees them
// in bulk (a run's instances when it is summarised or pruned), between allocations that live
// on; glibc keeps the freed pages unless told otherwise, and its RSS creeps up over an hour.
#pragma once

#include <cstddef>
#include <cstdint>

namespace corral::master {

// Blocks of this size and more are mapped on their own once tune_heap() ran.
inline constexpr size_t kHeapMapBytes = 256 * 1024;

// Called once at start-up: blocks of kHeapMapBytes and more (a run's instance and step vectors,
// large API answers, a burst of journal rows) are mapped on their own and returned whole when
// freed, instead of being carved from the main heap once glibc's sliding threshold has risen
// past them.
void tune_heap();

// Gives the free pages inside the heap back to the kernel (malloc_trim). Returns the time it
// took in microseconds. Called after retention released runs, not on every turn.
uint64_t release_free_heap();

}  // namespace corral::master
