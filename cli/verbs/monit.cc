// `corral monit [--interval D]`: a live view of the daemon in the terminal, like `pm2 monit`:
// each worker's CPU, memory, loop lag and active instances with their recent history, the runs
// with their progress and failure groups, and the last log lines. q or Ctrl-C quits.
#include <algorithm>
#include <chrono>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/monit_screen.h"
#include "cli/monit_source.h"
#include "cli/verb.h"
#include "config/config.h"

namespace corral::cli {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// Each call to the daemon: a daemon that does not answer within this shows as not answering.
constexpr long kCallTimeoutMs = 2000;
constexpr uint64_t kShortestIntervalMs = 100;

class MonitVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("--interval", interval_, "time between refreshes, e.g. 500ms or 2s")
        ->capture_default_str();
  }

  int run(const Context& ctx) override {
    auto interval = config::parse_duration_ms(interval_);
    if (!interval) return fail("--interval: " + interval.status().message());
    if (*interval < kShortestIntervalMs) {
      return fail("--interval: expected at least 100ms, got \"" + interval_ + "\"");
    }
    // Without a daemon, monit fails as every other verb does, before taking the terminal.
    const Api api(ctx, kCallTimeoutMs);
    auto health = api.get("/health");
    if (!health) return report_failure(health.status(), api.socket_path());
    auto screen = Screen::open();
    if (!screen) return fail(screen.status().message());
    return watch(ctx, **screen, milliseconds(*interval));
  }

 private:
  // Refreshes every `interval` and redraws after each refresh and resize, until asked to quit.
  // A daemon that stops answering shows on the screen; monit keeps asking.
  static int watch(const Context& ctx, Screen& screen, milliseconds interval) {
    MonitSource source(ctx, kCallTimeoutMs);
    MonitSnapshot snapshot;
    snapshot.interval = interval;
    snapshot.answered_at = WallClock::now();
    WorkerHistory history;
    auto next_refresh = SteadyClock::now();
    while (true) {
      if (SteadyClock::now() >= next_refresh) {
        source.refresh(snapshot, history, screen.layout().height);
        next_refresh = SteadyClock::now() + interval;
      }
      screen.draw(render_monit(snapshot, history, screen.layout()));
      const auto left = std::chrono::duration_cast<milliseconds>(next_refresh - SteadyClock::now());
      if (screen.wait(std::max(left, milliseconds(0))) == Screen::Event::kQuit) return 0;
    }
  }

  std::string interval_ = "1s";
};

CORRAL_REGISTER_VERB(MonitVerb, "monit",
                     "a live view of the workers, runs and logs in the terminal (q quits)")

}  // namespace
}  // namespace corral::cli
