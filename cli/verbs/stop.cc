// `corral stop`: asks the daemon to stop gracefully and waits until it is gone.
#include <cerrno>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/verb.h"
#include "cli/workers.h"
#include "config/config.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

using Clock = std::chrono::steady_clock;

bool process_exists(long pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

class StopVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("--timeout", timeout_,
                   "how long to wait for the daemon to stop (its workers' stop grace + margin)")
        ->capture_default_str();
  }

  int run(const Context& ctx) override {
    auto timeout = config::parse_duration_ms(timeout_);
    if (!timeout) return fail("--timeout: " + timeout.status().message());
    const auto deadline = Clock::now() + std::chrono::milliseconds(*timeout);
    const Api api(ctx, 2000);
    auto health = get_health(api);
    if (!health) return report_failure(health.status(), api.socket_path());
    const auto pid = static_cast<long>(health->pid);
    auto stopping = api.post("/shutdown", nlohmann::json::object());
    if (!stopping) return report_failure(stopping.status(), api.socket_path());

    // The socket goes away first; then give the process itself the rest of the time to exit,
    // so that a `corral start` right after does not find it still holding the TCP port.
    while (api.get("/health").status().code() != Code::kUnavailable) {
      if (Clock::now() >= deadline) {
        return fail("the daemon (pid " + std::to_string(pid) + ") still answers after " + timeout_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    while (process_exists(pid) && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::cout << "corral: daemon stopped (pid " << pid << ")\n";
    return kExitOk;
  }

 private:
  std::string timeout_ = "30s";
};

CORRAL_REGISTER_VERB(StopVerb, "stop", "stop the daemon and its workers gracefully")

}  // namespace
}  // namespace corral::cli
