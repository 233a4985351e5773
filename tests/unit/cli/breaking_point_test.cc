// The breaking-point search of `corral load --find-max --search bisect`: why a probe failed,
// and the search over a fake server whose breaking point is known.
#include <catch2/catch.hpp>

#include <sstream>

#include "cli/breaking_point.h"

using corral::Code;
using corral::Result;
using corral::Status;
using corral::api::LoadAnswer;
using corral::cli::BisectSearch;
using corral::cli::find_breaking_point;
using corral::cli::probe_failure;
using nlohmann::json;

namespace {

// A server that gives out above `limit` connections (dies with the load at death), on
// `flaky` of its probes just below it too.
struct FakeServer {
  explicit FakeServer(double limit_, int flaky_every_ = 0)
      : limit(limit_), flaky_every(flaky_every_) {}
  double limit;
  int flaky_every;  // every Nth probe in (limit * 0.97, limit] fails too; 0: never
  std::vector<json> loads;

  Result<LoadAnswer> operator()(const json& load) {
    loads.push_back(load);
    const double n = load["connections"].get<double>();
    LoadAnswer a;
    a.id = "l" + std::to_string(loads.size());
    a.state = "passed";
    const bool flaky =
        flaky_every > 0 && n > limit * 0.97 && static_cast<int>(loads.size()) % flaky_every == 0;
    if (n > limit || flaky) {
      a.state = "aborted";
      a.target.emplace();
      a.target->event = {{"event", "died"},
                         {"how", "was killed by SIGABRT"},
                         {"load", {{"connections", n}, {"vus", n}}}};
    }
    return a;
  }
};

json held(double connections) {
  return {{"model", "held"},
          {"connections", connections},
          {"pace", "1s"},
          {"duration", "40s"},
          {"target", {{"cmd", {"node", "server.js"}}}}};
}

}  // namespace

TEST_CASE(
    "breaking point: a probe fails when its target died, crossed, ran out, or a threshold broke") {
  LoadAnswer a;
  a.state = "passed";
  CHECK(probe_failure(a).empty());
  a.state = "aborted";
  a.target.emplace();
  a.target->event = {{"event", "died"}, {"how", "exited with code 1"}};
  CHECK(probe_failure(a) == "the target exited with code 1");
  a.state = "stopped";
  a.target->event = {{"event", "crossed"}, {"condition", "target.rss > 1GB"}};
  CHECK(probe_failure(a) == "crossed target.rss > 1GB");
  a.state = "failed";
  a.target->event = nullptr;
  a.thresholds = {{"latency: p99 <= 1000ms", 1200, false}, {"errors: rate <= 1%", 0, true}};
  CHECK(probe_failure(a) == "crossed latency: p99 <= 1000ms");
  a.target->process.emplace();
  a.target->process->cause = "FATAL ERROR: JavaScript heap out of memory";
  CHECK(probe_failure(a) ==
        "the target ran out of memory: FATAL ERROR: JavaScript heap out of memory");
  LoadAnswer stopped;
  stopped.state = "stopped";
  stopped.reason = "stopped through the API";
  CHECK(probe_failure(stopped) == "stopped: stopped through the API");
}

TEST_CASE("breaking point: steps up until a probe fails, then halves to within the precision") {
  FakeServer server{2990};
  BisectSearch search;  // factor 2, 5 %
  std::ostringstream out;
  auto result = find_breaking_point(held(1000), search, std::ref(server), out);
  REQUIRE(result.is_ok());
  // 1000 holds, 2000 holds, 4000 fails; then 3000 fails, 2500 holds, 2750 holds: 2875 ±4.3 %.
  std::vector<double> probed;
  for (const json& l : server.loads) probed.push_back(l["connections"].get<double>());
  CHECK(probed == std::vector<double>{1000, 2000, 4000, 3000, 2500, 2750});
  CHECK((*result)["holds"] == 2750);
  CHECK((*result)["fails"] == 3000);
  CHECK((*result)["estimate"] == 2875);
  const double precision = (*result)["precision"];
  CHECK(precision <= 0.05);
  CHECK((*result)["probes"][2]["at_death"] == 4000);
  // Each probe is a constant load for the step's duration, thresholds from the bounds, and
  // keeps the section's target: a fresh one each.
  CHECK(server.loads[0]["duration"] == "10s");
  CHECK_FALSE(server.loads[0].contains("stages"));
  CHECK(server.loads[0]["target"]["cmd"][0] == "node");
  CHECK(server.loads[0]["thresholds"].contains("latency"));
  CHECK_THAT(out.str(), Catch::Contains("probe 3: 4000 connections  failed: the target was killed "
                                        "by SIGABRT (under 4000)  l3\n"));
  CHECK_THAT(out.str(), Catch::Contains("breaking point: 2875 connections ±4.3 %, after 6 probes\n"
                                        "  fails at 3000 in 1 of 1 probes (under 3000 connections "
                                        "when it gave out)\n  holds at 2750\n"));
}

TEST_CASE(
    "breaking point: a staged section starts at its highest stage, and a first failure bisects "
    "down") {
  FakeServer server{700};
  json staged = held(0);
  staged.erase("connections");
  staged["stages"] = {{{"duration", "40s"}, {"target", 3000}}};
  BisectSearch search;
  search.precision = 0.1;
  std::ostringstream out;
  auto result = find_breaking_point(staged, search, std::ref(server), out);
  REQUIRE(result.is_ok());
  std::vector<double> probed;
  for (const json& l : server.loads) probed.push_back(l["connections"].get<double>());
  // 3000 fails; 1500, 750 fail; 375 holds; 563 holds; 656 holds: 703 ±6.7 %, then 703 fails.
  CHECK(probed.front() == 3000);
  CHECK((*result)["holds"].get<double>() <= 700);
  CHECK((*result)["fails"].get<double>() > 700);
  CHECK((*result)["precision"].get<double>() <= 0.1);
}

TEST_CASE("breaking point: with repeats a load fails when any probe does, and says in how many") {
  FakeServer server{1000, 2};  // just below the limit, every second probe fails too
  BisectSearch search;
  search.repeat = 3;
  search.max_probes = 30;
  std::ostringstream out;
  auto result = find_breaking_point(held(600), search, std::ref(server), out);
  REQUIRE(result.is_ok());
  CHECK(server.loads.size() % 3 == 0);
  CHECK_THAT(out.str(), Catch::Matches("(.|\n)*  fails at [0-9]+ in [123] of 3 probes(.|\n)*"));
  CHECK((*result)["fails"].get<double>() > 970);
}

TEST_CASE("breaking point: the probes are bounded, and a server that never breaks is said so") {
  FakeServer server{1e9};
  BisectSearch search;
  search.max_probes = 4;
  std::ostringstream out;
  auto result = find_breaking_point(held(100), search, std::ref(server), out);
  REQUIRE(result.is_ok());
  CHECK(server.loads.size() == 4);
  CHECK((*result)["fails"].is_null());
  CHECK((*result)["holds"] == 800);
  CHECK(out.str() ==
        "probe 1: 100 connections  held  l1\nprobe 2: 200 connections  held  l2\n"
        "probe 3: 400 connections  held  l3\nprobe 4: 800 connections  held  l4\n"
        "no breaking point up to 800 connections (4 probes)\n");
  // The first probe cannot run: the error, nothing else.
  auto refused = find_breaking_point(
      held(100), search,
      [](const json&) -> Result<LoadAnswer> { return Status(Code::kUnavailable, "refused"); }, out);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message() == "refused");
}

TEST_CASE("breaking point: whole loads stop when no whole load is left between the two") {
  FakeServer server{10};
  BisectSearch search;
  search.precision = 0.001;  // finer than one connection
  std::ostringstream out;
  auto result = find_breaking_point(held(4), search, std::ref(server), out);
  REQUIRE(result.is_ok());
  CHECK((*result)["holds"] == 10);
  CHECK((*result)["fails"] == 11);
}
