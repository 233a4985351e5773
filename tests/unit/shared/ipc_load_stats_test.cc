// ipc::LoadSecond: a worker's second of a load test, encoded, decoded and added up.
#include <catch2/catch.hpp>

#include "shared/ipc/load_stats.h"

using corral::ipc::LoadSecond;
using corral::ipc::StepSecond;
using nlohmann::json;

namespace {

LoadSecond sample(uint64_t latency_us) {
  LoadSecond s;
  s.load = "l1-abcd";
  s.second = 3;
  s.vus = 10;
  s.running = 9;
  s.passed = 100;
  s.failed = 2;
  s.dropped = 1;
  s.late.record(150);
  StepSecond& step = s.steps[2];
  step.requests = 102;
  step.bytes = 4096;
  step.status = 1;
  step.timeout = 1;
  step.latency.record(latency_us, 102);
  step.raw.record(latency_us / 2, 102);
  s.reasons["expect: status was 500"] = 2;
  s.reason_traces["expect: status was 500"] = "4bf92f3577b34da6a3ce929d0e0e4736";
  s.messages_sent = 40;
  s.messages_received = 39;
  s.close_codes[1001] = 3;
  s.close_codes[1006] = 1;
  s.slowest = {{latency_us * 3, 2, 200, "ok", 3, "4bf92f3577b34da6a3ce929d0e0e4736"},
               {latency_us * 2, 2, 0, "timeout", 3, ""}};
  return s;
}

}  // namespace

TEST_CASE("load stats: a second round-trips through its JSON form, as text too") {
  LoadSecond s = sample(2000);
  auto back = corral::ipc::load_second_from_json(json::parse(to_json(s).dump()));
  REQUIRE(back);
  CHECK(to_json(*back) == to_json(s));
  CHECK(back->steps.at(2).errors() == 2);
  CHECK(back->steps.at(2).latency.value_at(50) == 2000);
  CHECK(back->late.count() == 1);
  CHECK(back->messages_received == 39);
  CHECK(back->close_codes.at(1001) == 3);
  CHECK_FALSE(back->done);
}

TEST_CASE("load stats: adding seconds adds every count and merges the histograms") {
  LoadSecond a = sample(2000), b = sample(4000);
  b.steps[0].requests = 5;
  b.reasons["transport error: refused"] = 1;
  a.add(b, 2);
  CHECK(a.passed == 200);
  CHECK(a.vus == 20);
  CHECK(a.steps.at(2).requests == 204);
  CHECK(a.steps.at(0).requests == 5);
  CHECK(a.steps.at(2).latency.count() == 204);
  CHECK(a.steps.at(2).latency.value_at(50) == 2000);
  CHECK(a.steps.at(2).latency.value_at(51) == 4000);
  CHECK(a.reasons.at("expect: status was 500") == 4);
  CHECK(a.reasons.size() == 2);
  // The first trace seen for a reason stays.
  CHECK(a.reason_traces.at("expect: status was 500") == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(a.messages_sent == 80);
  CHECK(a.close_codes.at(1001) == 6);
  CHECK(a.close_codes.at(1006) == 2);
  LoadSecond c = sample(1);
  c.reasons = {{"a third reason", 1}};
  c.reason_traces = {{"a third reason", "0af7651916cd43dd8448eb211c80319c"}};
  a.add(c, 2);
  CHECK(a.reasons.size() == 2);  // no room for a third
  CHECK(a.reason_traces.count("a third reason") == 0);  // nor for its trace
}

TEST_CASE("load stats: a malformed second is the sender's protocol error, naming the field") {
  const json good = to_json(sample(2000));
  auto with = [&](const std::string& pointer, json value) {
    json j = good;
    j[json::json_pointer(pointer)] = std::move(value);
    return j;
  };
  const std::vector<std::pair<json, const char*>> cases = {
      {json::array(), "payload: expected an object"},
      {with("/second", -1), "second: expected an unsigned 32-bit integer"},
      {with("/passed", "many"), "passed: expected an unsigned 64-bit integer"},
      {with("/done", 1), "done: expected true or false"},
      {with("/steps", json::array()), "steps: expected an object"},
      {with("/steps/x", json::object()), "steps: \"x\" is not a step index"},
      {with("/steps/01", json::object()), "\"01\" is not a step index"},
      {with("/steps/2/requests", -5), "steps.2.requests: expected an unsigned 64-bit integer"},
      {with("/steps/2/latency/n", 7), "histogram: \"n\" is not the sum of the counts"},
      {with("/late", json::array()), "late: histogram: expected an object"},
      {with("/reasons/why", -1), "reasons: the count of \"why\" is not an unsigned integer"},
      {with("/reason_traces/uncounted", "4bf9"),
       "reason_traces: \"uncounted\" is not a counted reason with a trace id"},
      {with("/reason_traces/expect: status was 500", 7),
       "reason_traces: \"expect: status was 500\" is not a counted reason with a trace id"},
      {with("/messages_sent", -1), "messages_sent: expected an unsigned 64-bit integer"},
      {with("/close_codes", 1000), "close_codes: expected an object"},
      {with("/close_codes/going", 1), "close_codes: \"going\" is not a close code"},
      {with("/close_codes/70000", 1), "close_codes: \"70000\" is not a close code"},
      {with("/close_codes/1001", "3"), "close_codes: the count of 1001 is not an unsigned"},
  };
  for (const auto& [j, message] : cases) {
    INFO(j.dump());
    auto r = corral::ipc::load_second_from_json(j);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.status().message(), Catch::Contains(message));
  }
  json no_load = good;
  no_load.erase("load");
  CHECK_THAT(corral::ipc::load_second_from_json(no_load).status().message(),
             Catch::Contains("load: missing"));
}

TEST_CASE("load stats: the slowest requests stay the slowest, at most ten over a test") {
  std::vector<corral::ipc::SlowRequest> list;
  for (uint64_t us : {5, 9, 1, 7, 3, 8, 2, 6, 4, 10, 11, 0}) {
    corral::ipc::keep_slowest(list, {us * 1000, 0, 200, "ok", 0, ""}, 10);
  }
  REQUIRE(list.size() == 10);
  CHECK(list.front().us == 11000);
  CHECK(list.back().us == 2000);
  LoadSecond total;
  for (uint64_t ms = 1; ms <= 4; ++ms) total.add(sample(ms * 1000));  // two each
  REQUIRE(total.slowest.size() == 8);
  CHECK(total.slowest[0].us == 12000);
  CHECK(total.slowest[0].trace == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(total.slowest[1].us == 9000);
  json j = to_json(sample(1000));
  j["slowest"][0]["us"] = -1;
  CHECK_THAT(corral::ipc::load_second_from_json(j).status().message(),
             Catch::Contains("slowest[0].us: expected"));
  j = to_json(sample(1000));
  const json first = j["slowest"][0];
  for (int i = 0; i < 10; ++i) j["slowest"].push_back(first);
  CHECK(corral::ipc::load_second_from_json(j).status().message() ==
        "slowest: expected an array of at most 10");
}
