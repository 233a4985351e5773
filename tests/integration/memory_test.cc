// The layered memory limits (--max-memory 64MB): the worker's own soft check, the master's hard
// limit, and the kernel backstop each replace a worker that grows, with their own reason.
#include <catch2/catch.hpp>

#include "tests/support/harness.h"

namespace corral::test {
namespace {

DaemonOptions memory_daemon(const std::string& fault) {
  return DaemonOptions()
      .with_workers(2)
      .with_config(Json{{"heartbeat_timeout", "2s"}, {"kill_grace", "1s"}, {"stop_grace", "2s"}})
      .with_args({"--max-memory", "64MB"})
      .with_env("CORRAL_TEST_FAULT", fault);
}

// Waits for slot 0's first exit and returns its entry. The first one is what the fault caused;
// later restarts misbehave the same way and are not looked at.
Json first_exit_of_slot0(Daemon& d) {
  Json w;
  d.wait_until(
      [&] {
        w = d.worker(0);
        return w.is_object() && w.at("last_exit").is_object();
      },
      seconds(15), "slot 0 to exit");
  return w;
}

TEST_CASE("memory: a worker past max_memory leaves by itself with reason memory_soft") {
  TempHome home;
  Daemon daemon(home, memory_daemon("alloc_soft@0"));
  Json w = first_exit_of_slot0(daemon);
  INFO("slot 0: " << w.dump());
  CHECK(w["last_exit"].at("reason") == "memory_soft");
  CHECK(w["last_exit"].at("signal") == 0);
  CHECK(daemon.worker(1).at("state") == "ready");
  CHECK(daemon.health().at("status") == "ok");
}

TEST_CASE(
    "memory: a worker past the hard limit is killed by the master with reason "
    "memory_hard") {
  TempHome home;
  Daemon daemon(home, memory_daemon("alloc_hard@0"));
  Json w = first_exit_of_slot0(daemon);
  INFO("slot 0: " << w.dump());
  CHECK(w["last_exit"].at("reason") == "memory_hard");
  CHECK(w["last_exit"].at("signal") == 9);
  CHECK(daemon.worker(1).at("state") == "ready");
}

TEST_CASE(
    "memory: an allocation refused by the kernel backstop ends the worker with reason "
    "oom_kernel") {
  TempHome home;
  Daemon daemon(home, memory_daemon("alloc_kernel@0"));
  CHECK(daemon.health().at("kernel_memory_backstop") != "none");
  Json w = first_exit_of_slot0(daemon);
  INFO("slot 0: " << w.dump());
  CHECK(w["last_exit"].at("reason") == "oom_kernel");
  CHECK(daemon.worker(1).at("state") == "ready");
}

}  // namespace
}  // namespace corral::test
