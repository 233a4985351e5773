#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <csignal>

namespace {
// corral's master and workers ignore SIGPIPE, so that a write to a peer that has gone (a hook
// command that exited without reading its payload, a killed worker) is an EPIPE error and not
// the end of the process. The tests run that code in this process: they ignore it too.
[[maybe_unused]] const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();
}  // namespace
