// The environment variables that make a daemon misbehave on purpose, for the integration tests:
// CORRAL_TEST_FAULT and CORRAL_TEST_POISON_INSTANCE (worker/test_faults.h) and
// CORRAL_TEST_JOURNAL_MAX_PAGES (a journal that fills up), CORRAL_TEST_CLOCK_STEP (a wall clock
// stepped forward, shared/proc.cc). They are compiled in only with the
// CMake option CORRAL_TEST_HOOKS, on by default because the test suite needs them; a release
// build (a package) turns it off, and its binary ignores them.
#pragma once

#include <cstdlib>

namespace corral {

// Whether this binary reads the test hooks.
constexpr bool kTestHooks =
#ifdef CORRAL_TEST_HOOKS
    true;
#else
    false;
#endif

// The value of test hook `name`, or nullptr when it is unset or this build has no test hooks.
inline const char* test_hook(const char* name) { return kTestHooks ? std::getenv(name) : nullptr; }

}  // namespace corral
