// Per-target limits through the real daemon against corral-target, with two workers: a
// scenario's max_in_flight and the daemon's rate hold over both workers together (the target
// records what reached it), /metrics shows what waits, and bad limits are refused by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

// One request to /delay per instance; `limits` on {{base}}.
Json delayed(const Json& limits, int ms) {
  Json s = {{"name", "limited"},
            {"steps", {{{"request", {{"url", "{{base}}/delay?ms=" + std::to_string(ms)}}},
                        {"expect", {{"status", 200}}}}}}};
  if (!limits.is_null()) s["limits"] = {{"{{base}}", limits}};
  return s;
}

// The most arrivals in any window of `window_ms`.
size_t most_in_window(std::vector<uint64_t> at, uint64_t window_ms) {
  std::sort(at.begin(), at.end());
  size_t most = 0;
  for (size_t lo = 0, hi = 0; hi < at.size(); ++hi) {
    while (at[hi] - at[lo] >= window_ms) ++lo;
    most = std::max(most, hi - lo + 1);
  }
  return most;
}

}  // namespace

TEST_CASE("limits: a scenario's max_in_flight holds across workers, and /metrics shows it") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  const int n = 40;
  std::string id = submit_run(d, delayed({{"max_in_flight", 3}}, 150), n, api);
  const std::string labels = "{origin=\"http://127.0.0.1:" + std::to_string(api.port()) +
                             "\",run=\"" + id + "\"}";
  // While it runs, the limit and the requests held back by it are in /metrics.
  d.wait_until(
      [&] {
        std::string m = d.api("GET", "/metrics").body;
        return metric_sample(m, "corral_limit_max_in_flight" + labels) == 3 &&
               metric_sample(m, "corral_limit_waiting" + labels) > 0;
      },
      seconds(20), "corral_limit_waiting of the run to show requests held back");
  wait_run_finished(d, id, seconds(60));
  CHECK(run_of(d, id)["counts"]["passed"] == n);
  Json stats = api.get("/delay-stats");
  INFO(stats.dump());
  CHECK(stats["arrivals_ms"].size() == static_cast<size_t>(n));
  CHECK(stats["most_at_once"] <= 3);
  CHECK(stats["most_at_once"] >= 2);  // the limit was used, by both workers' shares
  // Its limit goes with the run.
  d.wait_until(
      [&] { return metric_sample(d.api("GET", "/metrics").body, "corral_limit_in_flight" + labels) < 0; },
      seconds(10), "the finished run's limit to leave /metrics");
}

TEST_CASE("limits: the daemon's rate holds over every run and both workers") {
  TempHome home;
  JobApi api;
  Json config = {{"limits", {{api.base(), {{"rate", "20/s"}, {"burst", 1}}}}}};
  Daemon d(home, DaemonOptions().with_workers(2).with_config(config));
  d.wait_ready(2);
  std::string a = submit_run(d, delayed(nullptr, 0), 30, api);
  std::string b = submit_run(d, delayed(nullptr, 0), 30, api);
  wait_run_finished(d, a, seconds(60));
  wait_run_finished(d, b, seconds(60));
  CHECK(run_of(d, a)["counts"]["passed"] == 30);
  CHECK(run_of(d, b)["counts"]["passed"] == 30);
  auto arrivals = api.get("/delay-stats")["arrivals_ms"].get<std::vector<uint64_t>>();
  REQUIRE(arrivals.size() == 60);
  // 20 a second, and a bucket of at least one token per worker to start with.
  INFO("most in 1 s: " << most_in_window(arrivals, 1000));
  CHECK(most_in_window(arrivals, 1000) <= 22);
  // The workers' heartbeats bring the counts to /metrics.
  const std::string labels =
      "{origin=\"http://127.0.0.1:" + std::to_string(api.port()) + "\",run=\"\"}";
  d.wait_until(
      [&] {
        return metric_sample(d.api("GET", "/metrics").body,
                             "corral_limit_started_total" + labels) == 60;
      },
      seconds(10), "corral_limit_started_total to count the 60 requests");
  std::string m = d.api("GET", "/metrics").body;
  CHECK(metric_sample(m, "corral_limit_rate" + labels) == 20);
  CHECK(metric_sample(m, "corral_limit_throttled_total" + labels) > 0);
  CHECK(metric_sample(m, "corral_limit_in_flight" + labels) == 0);
}

TEST_CASE("limits: a small run behind a large one at the same limit takes turns with it") {
  TempHome home;
  JobApi api;
  Json config = {{"limits", {{api.base(), {{"max_in_flight", 2}}}}}};
  Daemon d(home, DaemonOptions().with_workers(2).with_config(config));
  d.wait_ready(2);
  // 100 requests of 100 ms, 2 at a time: the large run takes 5 s at least.
  std::string large = submit_run(d, delayed(nullptr, 100), 100, api);
  d.wait_until([&] { return api.get("/delay-stats")["arrivals_ms"].size() >= 4; }, seconds(20),
               "the large run to start");
  std::string small = submit_run(d, delayed(nullptr, 100), 4, api);
  wait_run_finished(d, small, seconds(30));
  CHECK(run_of(d, small)["counts"]["passed"] == 4);
  Json big = run_of(d, large);
  INFO(big.dump());
  CHECK(big["state"] != "finished");
  CHECK(big["counts"]["passed"] < 90);
  wait_run_finished(d, large, seconds(60));
  CHECK(api.get("/delay-stats")["most_at_once"] <= 2);
}

TEST_CASE("limits: the example passes, its limit holding requests back") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  Json scenario = Json::parse(read_file(std::string(CORRAL_EXAMPLES_DIR) + "/limits.json"));
  const int n = 60;
  std::string id = submit_run(d, scenario, n, api);
  const std::string labels = "{origin=\"http://127.0.0.1:" + std::to_string(api.port()) +
                             "\",run=\"" + id + "\"}";
  d.wait_until(
      [&] {
        std::string m = d.api("GET", "/metrics").body;
        return metric_sample(m, "corral_limit_rate" + labels) == 40 &&
               metric_sample(m, "corral_limit_throttled_total" + labels) > 0;
      },
      seconds(20), "the example's limit to hold requests back");
  wait_run_finished(d, id, seconds(60));
  CHECK(run_of(d, id)["counts"]["passed"] == n);
  CHECK(api.stats()["jobs"] == n);
}

TEST_CASE("limits: limits that are wrong are refused, naming the field") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  auto refused = [&](const Json& scenario, const Json& vars) {
    Json body = {{"scenario", scenario}, {"vars", vars}};
    auto r = d.api("POST", "/runs", body.dump());
    CHECK(r.status == 400);
    return r.json.value("error", r.body);
  };
  Json vars = {{"base", api.base()}};
  Json s = delayed({{"max_in_flight", 0}}, 0);
  CHECK_THAT(refused(s, vars), Catch::Contains("limits[\"{{base}}\"].max_in_flight"));
  s = delayed({{"rate", "fast"}}, 0);
  CHECK_THAT(refused(s, vars), Catch::Contains("expected a rate like \"50/s\""));
  s = delayed({{"max_in_flight", 2}}, 0);
  CHECK_THAT(refused(s, {{"base", "not a url"}}), Catch::Contains("expected an http(s) URL"));
  s["limits"] = {{"{{job}}", {{"max_in_flight", 2}}}};
  CHECK_THAT(refused(s, vars), Catch::Contains("unknown variable"));
  s["limits"] = {{api.base() + "/jobs", {{"max_in_flight", 2}}}};
  CHECK_THAT(refused(s, vars), Catch::Contains("(no path)"));
  // A load test measures its target as it is.
  Json load = {{"scenario", delayed({{"max_in_flight", 2}}, 0)},
               {"vars", vars},
               {"load", {{"vus", 1}, {"duration", "1s"}}}};
  auto r = d.api("POST", "/loads", load.dump());
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("per-target limits are for scenario runs"));
}
