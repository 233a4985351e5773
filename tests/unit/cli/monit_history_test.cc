// What `corral monit` keeps between refreshes: each worker's last samples, and how a series
// draws as a sparkline. (Its CPU meter is shared/cpu_meter.h.)
#include <catch2/catch.hpp>

#include "cli/monit_history.h"

namespace corral::cli {
namespace {

using Series = std::vector<std::optional<double>>;

TEST_CASE("monit sparkline: draws 0..top as the eight bars, unknown values as spaces") {
  struct Case {
    Series values;
    double top;
    size_t width;
    bool utf8;
    std::string expected;
  };
  const Case cases[] = {
      {{0, 1, 2, 3, 4, 5, 6, 7}, 7, 8, true, "▁▂▃▄▅▆▇█"},
      {{0, 1, 2, 3, 4, 5, 6, 7}, 7, 8, false, "._-=+*#@"},
      {{0, std::nullopt, 7}, 7, 3, false, ". @"},
      {{7, 7}, 7, 5, false, "   @@"},          // fewer values than room: right-aligned
      {{0, 0, 7, 7, 14}, 7, 3, false, "@@@"},  // the last `width` values; above top is full
      {{3, 3}, 0, 2, true, "▁▁"},              // nothing to scale to: the lowest bar
      {{}, 10, 2, true, "  "},
      {{1, 2}, 2, 0, true, ""},
  };
  for (const Case& c : cases) {
    INFO(c.expected);
    CHECK(sparkline(c.values, c.top, c.width, c.utf8) == c.expected);
  }
}

TEST_CASE("monit history: keeps the last 30 samples of each slot, and forgets removed slots") {
  WorkerHistory history;
  for (int i = 0; i < 40; ++i) history.add(0, {double(i), std::nullopt, 0.5, 7});
  history.add(1, {});
  const Series cpu = history.series(0, &WorkerSample::cpu_percent);
  REQUIRE(cpu.size() == WorkerHistory::kLength);
  CHECK(cpu.front() == 10);
  CHECK(cpu.back() == 39);
  CHECK(history.series(0, &WorkerSample::rss_bytes).back() == std::nullopt);
  CHECK(history.series(1, &WorkerSample::active).size() == 1);
  CHECK(history.series(2, &WorkerSample::active).empty());
  history.keep_only({1});
  CHECK(history.series(0, &WorkerSample::cpu_percent).empty());
  CHECK(history.series(1, &WorkerSample::active).size() == 1);
}

TEST_CASE("monit history: without a process a worker's sample knows nothing but CPU") {
  api::WorkerEntry ready;
  ready.slot = 0;
  ready.pid = 456;
  ready.rss_bytes = 12897484;
  ready.loop_lag_ms = 0.3;
  ready.active = 7;
  const WorkerSample s = sample_of(ready, 12.5);
  CHECK(s.cpu_percent == 12.5);
  CHECK(s.rss_bytes == 12897484);
  CHECK(s.loop_lag_ms == 0.3);
  CHECK(s.active == 7);
  api::WorkerEntry gone;  // pid 0: no process
  gone.slot = 1;
  const WorkerSample none = sample_of(gone, {});
  CHECK_FALSE(none.cpu_percent);
  CHECK_FALSE(none.rss_bytes);
  CHECK_FALSE(none.loop_lag_ms);
  CHECK_FALSE(none.active);
  CHECK(largest({std::nullopt, 3, 9, std::nullopt, 1}) == 9);
  CHECK(largest({}) == 0);
}

}  // namespace
}  // namespace corral::cli
