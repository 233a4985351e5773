#include "master/heap.h"

#include <malloc.h>

#include <chrono>

namespace corral::master {

void tune_heap() {
  // Setting the threshold also turns off glibc's dynamic adjustment of it (mallopt(3)).
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapMapBytes));
}

uint64_t release_free_heap() {
  auto start = std::chrono::steady_clock::now();
  malloc_trim(0);
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
}

}  // namespace corral::master
