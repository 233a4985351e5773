#include "shared/uv/guard.h"

#include <spdlog/spdlog.h>

#include <atomic>

namespace corral::uv {
namespace {

std::atomic<uint64_t> failures{0};

}  // namespace

void report_callback_failure(const char* where, const char* what) noexcept {
  failures.fetch_add(1, std::memory_order_relaxed);
  try {
    spdlog::error("exception in a {} callback: {}", where, what);
  } catch (...) {
    // Logging failed too (out of memory): the count is all that is left.
  }
}

uint64_t callback_failures() noexcept { return failures.load(std::memory_order_relaxed); }

}  // namespace corral::uv
