// The answer model of GET /loads/<id> (shared/api/loads.h): what the master writes, the CLI
// reads back the same, and a field of the wrong type is an error that names it.
#include <catch2/catch.hpp>

#include "shared/api/loads.h"

namespace corral::api {
namespace {

using nlohmann::json;

LoadAnswer full_answer() {
  LoadAnswer a;
  a.id = "l3-abcd";
  a.name = "checkout";
  a.state = "failed";
  a.reason = "threshold crossed";
  a.model = "open";
  a.load = {{"rate", 2000}, {"duration", "30s"}};
  a.created = "2026-12-05T14:00:00.000Z";
  a.ended = "2026-12-05T14:00:30.000Z";
  a.duration_s = 30;
  a.elapsed_s = 30;
  a.workers = 2;
  a.vus = 3;
  a.vus_max = 18;
  a.requests = 60000;
  a.rps = 2000;
  a.bytes = 1 << 20;
  a.iterations = {59990, 10, 3, 0};
  a.errors = {10, 10.0 / 60000, 7, 0, 3, 0};
  a.connections = {0, 20, 22, 1, 2, {{"1001", 1}, {"1006", 1}}};
  a.messages = {600, 598, 20, 19.9};
  a.tls = {22, 20, 2, {22, 0.5, 0.9, 0.8, 1.1, 1.4, 2.0, 2.1, 2.2}};
  a.protocols = {0, 60000};
  a.corrected = true;
  a.latency = {60000, 0.2, 1.9, 1.86, 2.1, 2.5, 3.01, 4.2, 9.5};
  a.latency_raw = {60000, 0.1, 0.5, 0.41, 0.8, 1.0, 1.9, 2.0, 4.0};
  a.start_lateness = {{60000, 0, 0.01, 0.004, 0.01, 0.1, 0.21, 0.3, 0.4}, 0};
  a.steps = {{0, "get", 60000, a.errors, a.latency, a.latency_raw}};
  a.thresholds = {{"latency: p99 < 2ms", 3.01, false}, {"errors: rate < 1%", 0.0002, true}};
  a.reasons = {{"expect: status was 503", 7}};
  a.reason_traces = {{"expect: status was 503", "0af7651916cd43dd8448eb211c80319c"}};
  a.slowest = {{12, 0, "get", 48.2, 200, "ok", "4bf92f3577b34da6a3ce929d0e0e4736"},
               {3, 0, "get", 30.0, 0, "timeout", ""}};
  a.events = {{10, "stage", "stage 2 of 3: to 200/s"},
              {27.2, "target", "the target (pid 4242) was killed by SIGABRT at 27.2 s"}};
  LoadTargetProcess started{
      {"node", "server.js"},
      "died",
      std::nullopt,
      "SIGABRT",
      27.2,
      196608000,
      "FATAL ERROR: ... JavaScript heap out of memory",
      {{"stdout", "listening on 127.0.0.1:18787"}, {"stderr", "<--- JS stacktrace --->"}}};
  a.target =
      LoadTarget{4242, std::nullopt, {{"rss", 1e9}}, 1e9, 0.9, nullptr, json::array(), started};
  a.cluster = LoadCluster{3, 0, std::nullopt, {{"b/1", 1, "done", true}}};
  a.series = json::array({{{"t", 1}, {"rps", 1999}}});
  return a;
}

TEST_CASE("api loads: an answer reads back as the master wrote it") {
  const LoadAnswer a = full_answer();
  auto back = load_from_json(json::parse(to_json(a).dump()));
  INFO((back ? "" : back.status().message()));
  REQUIRE(back.is_ok());
  CHECK(*back == a);
  auto list = loads_from_json({{"loads", json::array({to_json(a), to_json(LoadAnswer{})})}});
  REQUIRE(list.is_ok());
  REQUIRE(list->size() == 2);
  CHECK((*list)[0] == a);
  CHECK_FALSE((*list)[1].target);  // absent: none
}

TEST_CASE("api loads: a field of the wrong type is an error that names it") {
  json j = to_json(full_answer());
  j["thresholds"][1]["ok"] = "yes";
  auto read = load_from_json(j);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::StartsWith("load.thresholds[1].ok: expected"));
  j = to_json(full_answer());
  j["connections"]["close_codes"]["1001"] = "one";
  read = load_from_json(j);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::StartsWith("load.connections.close_codes.1001"));
  j["connections"]["close_codes"] = 7;
  read = load_from_json(j);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::Contains("close_codes: expected an object"));
  j = to_json(full_answer());
  j["target"]["process"]["lines"][1]["stream"] = 2;
  read = load_from_json(j);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::StartsWith("load.target.process.lines[1].stream"));
  j = to_json(full_answer());
  j["target"]["process"]["cmd"] = {"node", 1};
  read = load_from_json(j);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::Contains("cmd: expected an array of strings"));
  j = to_json(full_answer());
  j["messages"]["sent"] = -1;
  read = load_from_json(j);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::StartsWith("load.messages.sent: expected"));
  j = to_json(full_answer());
  j["tls"]["handshake"]["p99"] = "1ms";
  read = load_from_json(j);
  REQUIRE_FALSE(read.is_ok());
  CHECK_THAT(read.status().message(), Catch::StartsWith("load.tls.handshake.p99: expected"));
  j = to_json(full_answer());
  j["reasons"]["expect: status was 503"] = -1;
  CHECK_FALSE(load_from_json(j).is_ok());
  auto list = loads_from_json({{"loads", json::array({to_json(full_answer()), 7})}});
  REQUIRE_FALSE(list.is_ok());
  CHECK_THAT(list.status().message(), Catch::StartsWith("loads[1]"));
}

}  // namespace
}  // namespace corral::api
