// The boundary between C callbacks (libuv, libcurl) and corral's C++: an exception must never
// unwind through C frames, so every trampoline from a loop callback into corral code runs its
// body through guard().
//
// An exception that reaches guard() was not handled closer to its cause (the engine ends the
// instance it belongs to; the master replaces a worker that broke the protocol). guard() logs
// it with `where` and counts it; the loop goes on. Loop threads; the counter is atomic.
#pragma once

#include <cstdint>
#include <exception>

namespace corral::uv {

void report_callback_failure(const char* where, const char* what) noexcept;
// How many exceptions guard() has caught in this process.
uint64_t callback_failures() noexcept;

template <typename Fn>
void guard(const char* where, Fn&& fn) noexcept {
  try {
    fn();
  } catch (const std::exception& e) {
    report_callback_failure(where, e.what());
  } catch (...) {
    report_callback_failure(where, "an exception that is not a std::exception");
  }
}

}  // namespace corral::uv
