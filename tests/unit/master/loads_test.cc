// master::Loads: adding workers' seconds, the end of a test, thresholds, and a worker leaving.
#include <catch2/catch.hpp>

#include "config/load/parse.h"
#include "master/loads.h"

using corral::ipc::LoadSecond;
using corral::master::LoadState;
using corral::master::Loads;
using corral::master::LoadTest;
using nlohmann::json;

namespace {

const json kScenario = {{"name", "t"},
                        {"steps", json::array({{{"name", "login"}, {"request", {{"url", "x"}}}},
                                               {{"name", "get"}, {"request", {{"url", "y"}}}}})}};

LoadTest& add(Loads& loads, const char* load_text, std::set<int> slots = {0, 1}) {
  json load = json::parse(load_text);
  auto spec = corral::load::parse_load(load);
  REQUIRE(spec);
  return loads.add("l1", kScenario, json::object(), load, *spec, std::move(slots), 1000, 1000);
}

// One second of worker traffic: `requests` to step `step`, each taking `ms`, some failing.
LoadSecond second(uint32_t t, uint32_t step, uint64_t requests, uint64_t ms, uint64_t errors = 0,
                  bool done = false) {
  LoadSecond s;
  s.load = "l1";
  s.second = t;
  s.done = done;
  s.vus = 2;
  s.passed = requests - errors;
  s.failed = errors;
  auto& st = s.steps[step];
  st.requests = requests;
  st.status = errors;
  st.latency.record(ms * 1000, requests);
  st.raw.record(ms * 1000, requests);
  return s;
}

}  // namespace

TEST_CASE("loads: a second counts once every worker has reported it") {
  Loads loads;
  LoadTest& t = add(loads, R"({"vus": 4, "duration": "3s"})");
  REQUIRE(loads.on_second(0, second(0, 1, 100, 2), 2000));
  CHECK(t.series.empty());  // worker 1 has not reported second 0 yet
  REQUIRE(loads.on_second(0, second(1, 1, 100, 2), 3000));
  CHECK(t.series.empty());
  REQUIRE(loads.on_second(1, second(0, 1, 50, 4), 3000));
  REQUIRE(t.series.size() == 1);
  CHECK(t.series[0]["rps"] == 150);
  CHECK(t.series[0]["vus"] == 4);
  CHECK(t.series[0]["p50"] == 2.0);
  CHECK(t.series[0]["max"] == 4.0);
  CHECK(t.total.steps.at(1).requests == 150);
  CHECK_FALSE(t.ended());
  // A report for a test that does not exist is the worker's protocol error.
  LoadSecond stray = second(0, 0, 1, 1);
  stray.load = "l9";
  CHECK(loads.on_second(0, std::move(stray), 3000).code() == corral::Code::kProtocol);
}

TEST_CASE("loads: the test ends when every worker is done, passed or failed by its thresholds") {
  Loads loads;
  LoadTest& t = add(loads, R"({"vus": 4, "duration": "2s", "thresholds": {
      "errors": ["rate < 10%"], "latency{step:get}": ["p99 < 5ms"], "rps": ["> 50"]}})");
  REQUIRE(loads.on_second(0, second(0, 1, 100, 2, 5), 2000));
  REQUIRE(loads.on_second(1, second(0, 1, 100, 2, 5), 2000));
  REQUIRE(loads.on_second(0, second(1, 1, 100, 2, 5, true), 3000));
  CHECK_FALSE(t.ended());
  REQUIRE(loads.on_second(1, second(1, 0, 100, 9, 50, true), 3000));
  REQUIRE(t.ended());
  // 65 errors of 400 requests: 16.25 %, crossed; step "get" stays under 5 ms; 400 in 2 s: 200/s.
  CHECK(t.state == LoadState::kFailed);
  json j = corral::api::to_json(loads.answer(t, true, 4000));
  CHECK(j["requests"] == 400);
  CHECK(j["rps"] == 200.0);
  CHECK(j["errors"]["rate"] == 0.1625);
  REQUIRE(j["thresholds"].size() == 3);
  for (const json& th : j["thresholds"]) {
    INFO(th.dump());
    if (th["name"] == "errors: rate < 10%") CHECK(th["ok"] == false);
    if (th["name"] == "latency{step:get}: p99 < 5ms") {
      CHECK(th["ok"] == true);
      CHECK(th["value"] == 2.0);  // milliseconds
    }
    if (th["name"] == "rps: > 50") CHECK(th["ok"] == true);
  }
  CHECK(j["series"].size() == 2);
  CHECK(j["steps"].size() == 2);
  CHECK(j["steps"][1]["name"] == "get");
}

TEST_CASE("loads: ws_latency and ws_errors count the WebSocket steps only, and messages add up") {
  Loads loads;
  LoadTest& t = add(loads, R"({"vus": 2, "duration": "1s", "thresholds": {
      "ws_latency": ["p99 < 5ms"], "ws_errors": ["rate < 10%"], "errors": ["rate < 10%"]}})");
  t.step_kinds = {"request", "ws_receive"};  // as the master's check of the scenario sets them
  LoadSecond a = second(0, 0, 100, 50, 50, true);  // the HTTP step: slow, half failing
  LoadSecond b = second(0, 1, 100, 2, 5, true);    // the ws_receive step: fast, 5 % failing
  a.messages_sent = b.messages_sent = 100;
  a.messages_received = 98;
  b.messages_received = 97;
  a.closed = 1;
  a.close_codes[4001] = 1;
  b.closed = 2;
  b.close_codes[4001] = 2;
  REQUIRE(loads.on_second(0, std::move(a), 2000));
  REQUIRE(loads.on_second(1, std::move(b), 2000));
  REQUIRE(t.ended());
  json j = corral::api::to_json(loads.answer(t, true, 2000));
  for (const json& th : j["thresholds"]) {
    INFO(th.dump());
    if (th["name"] == "ws_latency: p99 < 5ms") CHECK(th["value"] == 2.0);
    if (th["name"] == "ws_errors: rate < 10%") CHECK(th["value"] == 0.05);
    if (th["name"] == "errors: rate < 10%") CHECK(th["value"] == 0.275);
  }
  CHECK(j["messages"]["sent"] == 200);
  CHECK(j["messages"]["received"] == 195);
  CHECK(j["connections"]["closed"] == 3);
  CHECK(j["connections"]["close_codes"]["4001"] == 3);
  CHECK(j["series"][0]["received"] == 195);
  CHECK(t.state == LoadState::kFailed);  // errors over every step crossed
}

TEST_CASE("loads: abort_on_fail thresholds are crossed only after their delay") {
  Loads loads;
  LoadTest& t = add(loads, R"({"vus": 1, "duration": "1m", "thresholds": {
      "errors": [{"threshold": "count < 3", "abort_on_fail": true, "delay": "2s"}]}})", {0});
  REQUIRE(loads.on_second(0, second(0, 0, 10, 1, 5), 2000));
  CHECK(loads.crossed_aborting(t, 2000).empty());  // 1 s in: too early
  REQUIRE(loads.on_second(0, second(1, 0, 10, 1, 0), 3000));
  auto crossed = loads.crossed_aborting(t, 3000);
  REQUIRE(crossed.size() == 1);
  CHECK(crossed[0].value == 5);
  REQUIRE(loads.end(t, LoadState::kAborted, "aborted: errors crossed", 3000));
  CHECK_FALSE(loads.end(t, LoadState::kStopped, "again", 3000));  // already ending
  CHECK_FALSE(t.ended());  // until the worker reports its end
  REQUIRE(loads.on_second(0, second(2, 0, 1, 1, 0, true), 3500));
  CHECK(t.state == LoadState::kAborted);
  CHECK(t.reason == "aborted: errors crossed");
  CHECK(Loads::elapsed_s(t, 9000) == 2.0);  // from the start to the abort, not to now
}

TEST_CASE("loads: a worker that leaves is dropped, and the test goes on and says so") {
  Loads loads;
  LoadTest& t = add(loads, R"({"vus": 4, "duration": "2s"})");
  REQUIRE(loads.on_second(0, second(0, 0, 10, 1), 2000));
  loads.worker_gone(1, 2100);
  REQUIRE(t.series.size() == 1);  // second 0 no longer waits for worker 1
  CHECK(t.reason == "worker 1 left during the test");
  REQUIRE(loads.on_second(1, second(0, 0, 10, 1), 2200));  // late: ignored
  CHECK(t.total.steps.at(0).requests == 10);
  REQUIRE(loads.on_second(0, second(1, 0, 10, 1, 0, true), 3000));
  CHECK(t.state == LoadState::kPassed);
  CHECK(t.workers == 2);
}

TEST_CASE("loads: the watched target ends the test when a stop_when holds, with the load then") {
  Loads loads;
  LoadTest& t = add(loads, R"({"vus": 4, "duration": "60s",
      "watch": {"pid": 77, "stop_when": ["target.rss > 100MB"]}})", {0});
  REQUIRE(loads.on_second(0, second(0, 1, 100, 2), 2000));
  REQUIRE(t.series.size() == 1);
  CHECK_FALSE(loads.on_target(t, {{"up", true}, {"rss", 50u << 20}}, 2100));
  auto reason = loads.on_target(t, {{"up", true}, {"rss", 150u << 20}}, 3200);
  REQUIRE(reason);
  CHECK(*reason == "stop_when target.rss > 100MB: 150MB at 2.2 s");
  CHECK(t.target_event["event"] == "crossed");
  CHECK(t.target_event["condition"] == "target.rss > 100MB");
  CHECK(t.target_event["load"]["rps"] == 100);
  CHECK(t.target_event["load"]["vus"] == 2);
  CHECK_FALSE(t.target_event["load"].contains("sent"));  // no WebSocket messages
  CHECK(t.target.size() == 2);
  CHECK(t.target[1]["t"] == 2.2);  // seconds of the test (started at 1000), not of the watch
  // The first event is kept: later samples are recorded, not judged again.
  CHECK_FALSE(loads.on_target(t, {{"up", false}}, 4000));
  CHECK(t.target_event["event"] == "crossed");
  json j = corral::api::to_json(loads.answer(t, true, 4000));
  CHECK(j["target"]["pid"] == 77);
  CHECK(j["target"]["rss_max"] == double(150u << 20));
  CHECK(j["target"]["series"].size() == 3);
}

TEST_CASE("loads: a watched process that is gone ends the test") {
  Loads loads;
  LoadTest& t = add(loads, R"({"vus": 4, "duration": "60s", "watch": {"pid": 77}})", {0});
  auto reason = loads.on_target(t, {{"up", false}}, 1500);
  REQUIRE(reason);
  CHECK(*reason == "the target (pid 77) is gone at 0.5 s");
  CHECK(t.target_event["event"] == "died");
}

TEST_CASE("loads: on the origin of a test over hosts, another host counts like one more worker") {
  Loads loads;
  const int other = Loads::host_slot(1);
  CHECK(other < 0);
  CHECK(Loads::share_of_slot(other) == 1);
  LoadTest& t = add(loads, R"({"vus": 4, "duration": "2s"})", {0, other});
  t.remote[other] = {"host-b", ""};
  t.host_count = 2;
  REQUIRE(loads.on_second(0, second(0, 1, 100, 2), 2000));
  CHECK(t.series.empty());  // the other host has not sent second 0 yet
  REQUIRE(loads.on_second(other, second(0, 1, 40, 3), 2500));
  REQUIRE(t.series.size() == 1);
  CHECK(t.series[0]["rps"] == 140);
  CHECK(t.series[0]["vus"] == 4);
  REQUIRE(loads.on_second(0, second(1, 1, 10, 2, 0, true), 3000));
  CHECK_FALSE(t.ended());
  loads.drop(t, other, "host host-b left during the test", 3100);
  CHECK(t.ended());
  CHECK(t.state == LoadState::kPassed);
  CHECK(t.reason == "host host-b left during the test");
  CHECK(t.total.steps.at(1).requests == 150);
  json j = corral::api::to_json(loads.answer(t, false, 3100));
  CHECK(j["cluster"]["others"][0]["host"] == "host-b");
  CHECK(j["cluster"]["others"][0]["share"] == 1);
  CHECK(j["cluster"]["others"][0]["taking_part"] == false);
  CHECK(j["cluster"]["others"][0]["state"] == "left");
}

TEST_CASE(
    "loads: the origin of a test over hosts forwards its own workers' seconds, not the others'") {
  Loads loads;
  std::vector<LoadSecond> sent;
  loads.set_forward([&](const LoadTest&, const LoadSecond& s) { sent.push_back(s); });
  const int other = Loads::host_slot(1);
  LoadTest& t = add(loads, R"({"vus": 4, "duration": "3s"})", {0, 1, other});
  t.remote[other] = {"host-b", "running"};
  t.host_count = 2;
  REQUIRE(loads.on_second(0, second(0, 1, 100, 2), 2000));
  CHECK(sent.empty());  // worker 1 has not reported second 0
  REQUIRE(loads.on_second(1, second(0, 1, 50, 2), 2000));
  // Sent once this host's workers have reported it, before host-b's part has come.
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].second == 0);
  CHECK(sent[0].steps.at(1).requests == 150);  // this host's two workers, not host-b's
  CHECK(t.series.empty());
  REQUIRE(loads.on_second(other, second(0, 1, 40, 3), 2500));
  CHECK(sent.size() == 1);
  CHECK(t.series[0]["rps"] == 190);
  // A late second of a worker of this host goes at once.
  REQUIRE(loads.on_second(0, second(0, 1, 3, 2), 2600));
  REQUIRE(sent.size() == 2);
  CHECK(sent[1].steps.at(1).requests == 3);
  CHECK(t.local.empty());
}

TEST_CASE("loads: a share adopted as the test adds up every host's seconds again, and goes on") {
  Loads loads;
  std::vector<LoadSecond> sent;
  loads.set_forward([&](const LoadTest&, const LoadSecond& s) { sent.push_back(s); });
  LoadTest& t = add(loads, R"({"vus": 6, "duration": "4s"})", {0, 1});
  t.origin = "host-a";
  t.host_index = 1;
  t.host_count = 3;
  for (uint32_t i = 0; i < 3; ++i) {
    REQUIRE(loads.on_second(0, second(i, 1, 10, 2), 2000 + i * 1000));
    REQUIRE(loads.on_second(1, second(i, 1, 5, 2), 2000 + i * 1000));
  }
  REQUIRE(loads.on_second(0, second(3, 1, 10, 2), 4000));  // worker 1 has not sent second 3
  REQUIRE(sent.size() == 3);
  const std::vector<LoadSecond> own = sent;  // as the database has them
  sent.clear();
  // The old origin (share 0) sent seconds 0 and 1 before it died; host-c (share 2) second 0.
  Loads::ShareHistory a{"host-a", 0, "running", "host host-a, the test's origin, left", {}};
  a.seconds = {second(0, 1, 100, 5), second(1, 1, 100, 5)};
  Loads::ShareHistory c{"host-c", 2, "running", "", {second(0, 1, 1000, 1)}};
  loads.adopt(t, own, {a, c}, 4100);
  CHECK(t.origin.empty());
  CHECK(t.reason == "host host-a, the test's origin, left");
  REQUIRE(t.series.size() == 1);  // host-c has sent only second 0
  CHECK(t.series[0]["rps"] == 1115);
  CHECK(t.remote.at(Loads::host_slot(0)).host == "host-a");
  CHECK(t.remote.at(Loads::host_slot(0)).state == "left");
  CHECK(t.remote.at(Loads::host_slot(2)).state == "running");
  CHECK(t.slots.count(Loads::host_slot(0)) == 0);
  CHECK(t.slots.count(Loads::host_slot(2)) == 1);
  REQUIRE(loads.on_second(Loads::host_slot(2), second(1, 1, 1000, 1), 4200));
  REQUIRE(loads.on_second(Loads::host_slot(2), second(2, 1, 1000, 1), 4200));
  REQUIRE(loads.on_second(Loads::host_slot(2), second(3, 1, 1000, 1, 0, true), 4300));
  REQUIRE(t.series.size() == 3);
  CHECK(t.series[1]["rps"] == 1115);  // second 1: host-a's, this host's and host-c's
  CHECK(t.series[2]["rps"] == 1015);
  // From here on this host forwards its own workers' seconds as the origin does: second 3 once
  // it is complete, with worker 0's part from before the takeover.
  CHECK(sent.empty());
  REQUIRE(loads.on_second(1, second(3, 1, 5, 2, 0, true), 4400));
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].second == 3);
  CHECK(sent[0].steps.at(1).requests == 15);
  CHECK(t.series[3]["rps"] == 1015);
  REQUIRE(loads.on_second(0, second(4, 1, 10, 2, 0, true), 4500));
  CHECK(t.ended());
  CHECK(t.total.steps.at(1).requests == 200 + 45 + 15 + 10 + 4000);
}

TEST_CASE("loads: a share of another host's test sends its complete seconds, late ones and its end") {
  Loads loads;
  std::vector<LoadSecond> sent;
  loads.set_forward([&](const LoadTest& share, const LoadSecond& s) {
    CHECK(share.id == "l1");
    sent.push_back(s);
  });
  LoadTest& t = add(loads, R"({"vus": 4, "duration": "2s"})", {0, 1});
  t.origin = "host-a";
  t.host_index = 1;
  t.host_count = 2;
  REQUIRE(loads.on_second(0, second(0, 1, 100, 2), 2000));
  REQUIRE(loads.on_second(0, second(1, 1, 100, 2), 2000));
  CHECK(sent.empty());
  REQUIRE(loads.on_second(1, second(0, 1, 50, 2), 2100));
  REQUIRE(loads.on_second(1, second(1, 1, 50, 2), 2100));
  REQUIRE(sent.size() == 2);  // seconds 0 and 1, each both workers' added up
  CHECK(sent[0].second == 0);
  CHECK(sent[0].steps.at(1).requests == 150);
  CHECK(sent[1].second == 1);
  CHECK_FALSE(sent[1].done);
  // Worker 0's end comes with a second already sent: it goes as it is, not as the end.
  REQUIRE(loads.on_second(0, second(0, 1, 7, 2, 0, true), 2200));
  REQUIRE(sent.size() == 3);
  CHECK(sent[2].steps.at(1).requests == 7);
  CHECK_FALSE(sent[2].done);
  REQUIRE(loads.on_second(1, second(2, 1, 5, 2, 0, true), 2300));
  REQUIRE(sent.size() == 5);
  CHECK(sent[3].second == 2);
  CHECK(sent[4].done);
  CHECK(sent[4].steps.empty());
  CHECK(t.ended());
}

TEST_CASE("loads: events: a stage begun, a threshold first crossed after 5 s, a stop") {
  Loads loads;
  LoadTest& t = add(loads, R"({"stages": [{"duration": "3s", "target": 2},
                                          {"duration": "10s", "target": 4}],
      "thresholds": {"latency": ["p99 < 5ms"], "rps": ["> 1000000"], "errors": ["rate < 50%"]}})",
                    {0});
  for (uint32_t s = 0; s < 7; ++s)
    REQUIRE(loads.on_second(0, second(s, 1, 10, 9), 2000 + 1000 * s));
  // Crossed from the first second on, but judged from 5 s; rps is never an event.
  REQUIRE(t.events.size() == 1);
  CHECK(t.events[0].t == 5);
  CHECK(t.events[0].kind == "threshold");
  CHECK(t.events[0].text == "latency: p99 < 5ms crossed");
  CHECK(loads.end(t, corral::master::LoadState::kStopped, "stopped by request", 8500));
  auto answer = loads.answer(t, false, 8500);
  REQUIRE(answer.events.size() == 3);
  CHECK(answer.events[0].kind == "stage");  // at 3 s, before the others
  CHECK(answer.events[0].t == 3);
  CHECK(answer.events[0].text == "stage 2 of 2: to 4 VUs");
  CHECK(answer.events[2].kind == "stopped");
  CHECK(answer.events[2].t == Approx(7.5));
  CHECK(answer.events[2].text == "stopped by request");
}
