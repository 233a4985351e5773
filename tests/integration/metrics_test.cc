// GET /metrics as Prometheus scrapes it: the step duration histogram, requests, worker exits by
// reason, load tests while they run, and every series the Grafana dashboard in
// docs/grafana/corral.json queries.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

// The metric names the dashboard's queries use, histogram series by their family name.
std::set<std::string> dashboard_metrics() {
  std::ifstream in(CORRAL_GRAFANA_DASHBOARD);
  REQUIRE(in.good());
  Json dash = Json::parse(in);
  std::set<std::string> names;
  const std::regex metric("corral_[a-z_]+");
  for (const Json& panel : dash["panels"]) {
    for (const Json& target : panel.value("targets", Json::array())) {
      const std::string expr = target["expr"];
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it) {
        names.insert(std::regex_replace(it->str(), std::regex("_(bucket|sum|count)$"), ""));
      }
    }
  }
  return names;
}

// Whether the exposition has a sample of `name` (a histogram: of its _bucket series).
bool has_samples(const std::string& metrics, const std::string& name) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    for (const std::string& series : {name, name + "_bucket"}) {
      if (line.rfind(series, 0) == 0 && line.size() > series.size() &&
          (line[series.size()] == '{' || line[series.size()] == ' ')) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

TEST_CASE("metrics: steps, requests and worker exits are counted in /metrics") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json s = job_poll_scenario("metrics", 300, "100ms");
  s["vars"] = {{"base", api.base()}};
  std::string id = submit_run(d, s, 4, api);
  wait_run_finished(d, id, seconds(30));
  REQUIRE(run_of(d, id)["counts"]["passed"] == 4);
  REQUIRE(d.api("POST", "/workers/restart", R"({"slot":0})").status == 200);
  std::string m;
  d.wait_until(
      [&] {
        m = d.api("GET", "/metrics").body;
        return metric_sample(m, R"(corral_worker_exits_total{reason="stopped"})") == 1;
      },
      seconds(15), "the restart's exit in /metrics");
  INFO(m);
  // 4 starts and 4 polls passed; each poll took at least its job's 300 ms.
  CHECK(metric_sample(
            m, R"(corral_step_duration_seconds_count{kind="request",outcome="passed"})") == 4);
  CHECK(metric_sample(m, R"(corral_step_duration_seconds_count{kind="poll",outcome="passed"})") ==
        4);
  CHECK(metric_sample(
            m, R"(corral_step_duration_seconds_bucket{kind="poll",outcome="passed",le="0.25"})") ==
        0);
  CHECK(metric_sample(
            m, R"(corral_step_duration_seconds_bucket{kind="poll",outcome="passed",le="+Inf"})") ==
        4);
  CHECK(metric_sample(m, R"(corral_step_duration_seconds_sum{kind="poll",outcome="passed"})") >=
        1.2);
  CHECK_THAT(m, Catch::Contains("# TYPE corral_worker_loop_lag_seconds gauge"));
}

TEST_CASE("metrics: every series the Grafana dashboard queries is in /metrics") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json s = job_poll_scenario("dashboard", 100, "50ms");
  s["vars"] = {{"base", api.base()}};
  wait_run_finished(d, submit_run(d, s, 2, api), seconds(30));
  // A request that times out, for the connection errors panel.
  Json hang = {{"name", "hang"},
               {"steps", Json::array({{{"name", "get"},
                                       {"request", {{"url", api.base() + "/hang"},
                                                    {"timeout", "200ms"}}}}})}};
  wait_run_finished(d, submit_run(d, hang, 1, api), seconds(30));
  d.wait_until([&] { return has_samples(d.api("GET", "/metrics").body,
                                        "corral_http_connection_errors_total"); },
               seconds(10), "the timeout in /metrics (with the next heartbeat)");
  REQUIRE(d.api("POST", "/workers/restart", R"({"slot":0})").status == 200);
  d.wait_until([&] { return d.api("GET", "/workers").json["workers"][0]["state"] == "ready" &&
                            d.api("GET", "/metrics").body.find("corral_worker_exits_total{") !=
                                std::string::npos; },
               seconds(15), "the worker back after its restart");
  // A load test running, for the load panels.
  Json load_scenario = {
      {"name", "dashboard load"},
      {"steps", Json::array({{{"name", "get"}, {"request", {{"url", api.base() + "/delay?ms=5"}}}}})}};
  Json body = {{"scenario", load_scenario},
               {"load", {{"vus", 2}, {"duration", "60s"}, {"grace", "1s"}}}};
  ApiResponse created = d.api("POST", "/loads", body.dump());
  REQUIRE(created.status == 201);
  const std::string load = Json::parse(created.body)["load"];
  std::string m;
  d.wait_until(
      [&] {
        m = d.api("GET", "/metrics").body;
        return has_samples(m, "corral_load_requests_per_second");
      },
      seconds(15), "a complete second of the load test in /metrics");
  const std::set<std::string> names = dashboard_metrics();
  CHECK(names.size() >= 15);
  for (const std::string& name : names) {
    INFO("the dashboard queries " << name << "; /metrics:\n" << m);
    CHECK(has_samples(m, name));
  }
  CHECK(d.api("DELETE", "/loads/" + load).status == 200);
}
