// The knee search of `corral load --find-max`: judging steps, and the search over a fake
// server whose capacity is known.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "cli/find_max.h"

using corral::cli::find_knee;
using corral::cli::KneeBounds;
using corral::cli::KneeSearch;
using corral::cli::KneeStep;
using corral::cli::past_knee;
using nlohmann::json;

namespace {

KneeStep step(double target, double rps, double p99_ms = 5, double errors = 0, double dropped = 0) {
  KneeStep s;
  s.target = target;
  s.rps = rps;
  s.p99_ms = p99_ms;
  s.error_rate = errors;
  s.dropped_rate = dropped;
  s.state = "passed";
  return s;
}

}  // namespace

TEST_CASE("find-max: a step is past the knee by latency, errors, drops or flat throughput") {
  KneeBounds b;
  const KneeStep prev = step(100, 1000);
  CHECK(past_knee(&prev, step(150, 1490), b).empty());
  CHECK(past_knee(&prev, step(150, 1490, 1200), b) == "p99 1.20s > 1.00s");
  CHECK(past_knee(&prev, step(150, 1490, 5, 0.02), b) == "errors 2.00% > 1.00%");
  CHECK(past_knee(&prev, step(150, 1490, 5, 0, 0.3), b) == "dropped 30.00% > 1.00%");
  // 50 % more offered, 20 % more achieved: less than half the growth.
  CHECK(past_knee(&prev, step(150, 1200), b) == "throughput 20.0 % for 50.0 % more load");
  CHECK(past_knee(nullptr, step(150, 1200), b).empty());  // the first step has nothing to compare
  KneeStep aborted = step(150, 1490);
  aborted.state = "aborted";
  CHECK(past_knee(&prev, aborted, b) == "the step was aborted");
}

TEST_CASE("find-max: the search steps up to the knee of a server that serves 1,000/s at most") {
  std::vector<json> loads;
  auto run_step = [&](const json& load) -> corral::Result<corral::api::LoadAnswer> {
    loads.push_back(load);
    const double offered = load["rate"].get<double>();
    const double served = std::min(offered, 1000.0);
    // Two seconds' arrivals: whole counts.
    return corral::api::load_from_json(
        json{{"id", "l" + std::to_string(loads.size())},
             {"state", "passed"},
             {"rps", served},
             {"latency", {{"p50", 2.0}, {"p99", offered > 1000 ? 900.0 : 4.0}}},
             {"errors", {{"rate", 0.0}}},
             {"iterations",
              {{"passed", static_cast<uint64_t>(2 * served)},
               {"failed", 0},
               {"interrupted", 0},
               {"dropped", static_cast<uint64_t>(2 * (offered - served))}}}});
  };
  KneeSearch search;
  search.duration = "3s";
  std::ostringstream out;
  auto r = find_knee(
      json{
          {"rate", 200}, {"duration", "1m"}, {"max_vus", 50}, {"thresholds", {{"rps", {"> 100"}}}}},
      search, run_step, out);
  REQUIRE(r);
  // 200, 300, 450, 675, 1012.5: the last drops 1.2 % of its arrivals.
  REQUIRE(loads.size() == 5);
  CHECK(loads[0]["rate"] == 200.0);
  CHECK(loads[1]["rate"] == 300.0);
  CHECK(loads[4]["rate"] == 1012.5);
  CHECK(loads[0]["duration"] == "3s");
  CHECK(loads[0]["max_vus"] == 50);  // the rest of the section is kept
  // Each step is judged by the bounds as thresholds too, so that `corral runs` shows a step past
  // them as failed; the file's own thresholds were for one test.
  CHECK(loads[0]["thresholds"] == json{{"latency", {"p99 <= 1000ms"}},
                                       {"errors", {"rate <= 1%"}},
                                       {"dropped", {"rate <= 1%"}}});
  CHECK((*r)["broke"] == 4);
  CHECK((*r)["highest"]["target"] == 675.0);
  CHECK((*r)["why"] == "dropped 1.23% > 1.00%");
  CHECK_THAT(out.str(), Catch::Contains("highest sustainable load: 675 iterations/s"));
  CHECK_THAT(out.str(), Catch::Contains("broke first: dropped 1.23% > 1.00% at 1012 iterations/s"));
  CHECK_THAT(out.str(), Catch::Contains("note: arrivals were dropped because every VU was busy"));
}

TEST_CASE("find-max: VUs step in whole numbers, and a first step that breaks leaves no load") {
  std::vector<double> targets;
  auto run_step = [&](const json& load) -> corral::Result<corral::api::LoadAnswer> {
    targets.push_back(load["vus"].get<double>());
    return corral::api::load_from_json(json{{"id", "l1"},
                                            {"state", "passed"},
                                            {"rps", 10.0},
                                            {"latency", {{"p99", 5000.0}}},
                                            {"errors", {{"rate", 0.0}}}});
  };
  std::ostringstream out;
  auto r = find_knee(json{{"vus", 3}, {"duration", "1m"}}, KneeSearch{}, run_step, out);
  REQUIRE(r);
  CHECK(targets == std::vector<double>{3});
  CHECK((*r)["highest"].is_null());
  CHECK_THAT(out.str(), Catch::Contains("no sustainable load: the first step broke (p99 5.00s > 1.00s)"));
  CHECK(corral::cli::next_target(3, 1.5, false) == 5);
  CHECK(corral::cli::next_target(1, 1.2, false) == 2);  // always at least one more
}
