// parse_load(): the load section's models, stages, timing and thresholds.
#include <catch2/catch.hpp>

#include "config/load/parse.h"

using namespace corral::load;
using nlohmann::json;

namespace {

LoadSpec parsed(const char* text) {
  auto r = parse_load(json::parse(text));
  INFO(text);
  if (!r) FAIL(r.status().message());
  return *r;
}

}  // namespace

TEST_CASE("load parse: each model comes from its target field, or from \"model\" with stages") {
  LoadSpec closed = parsed(R"({"vus": 10, "duration": "30s", "think": "100ms"})");
  CHECK(closed.model == Model::kClosed);
  CHECK(closed.start == 10);
  REQUIRE(closed.stages.size() == 1);
  CHECK(closed.stages[0].duration_ms == 30000);
  CHECK(closed.stages[0].target == 10);
  CHECK(closed.think_ms == 100);
  CHECK(closed.pace_ms == 0);

  LoadSpec open = parsed(R"({"rate": 20000, "duration": "1m"})");
  CHECK(open.model == Model::kOpen);
  CHECK(open.max_vus == 1000);  // the default
  CHECK(open.target_at(59999) == 20000);

  LoadSpec held = parsed(
      R"({"connections": 100000, "pace": "5s", "duration": "10m",
          "source_addresses": ["127.0.0.1", "127.0.0.2"]})");
  CHECK(held.model == Model::kHeld);
  CHECK(held.pace_ms == 5000);
  CHECK(held.source_addresses == std::vector<std::string>{"127.0.0.1", "127.0.0.2"});

  LoadSpec ramp = parsed(R"({"model": "open", "start": 100, "max_vus": 50,
      "stages": [{"duration": "10s", "target": 1100}, {"duration": "0s", "target": 50},
                 {"duration": "5s", "target": 50}]})");
  CHECK(ramp.model == Model::kOpen);
  CHECK(ramp.max_vus == 50);
  CHECK(ramp.duration_ms() == 15000);
  CHECK(ramp.peak() == 1100);

  LoadSpec stages_only = parsed(R"({"stages": [{"duration": "1s", "target": 5}]})");
  CHECK(stages_only.model == Model::kClosed);
  CHECK(stages_only.start == 0);
}

TEST_CASE("load parse: hosts is a count, or all of them, and one by default") {
  CHECK(corral::load::parse_load(json::parse(R"({"vus": 2, "duration": "1s"})"))->hosts == 1);
  CHECK(corral::load::parse_load(json::parse(R"({"vus": 2, "duration": "1s", "hosts": 3})"))->hosts == 3);
  CHECK(corral::load::parse_load(json::parse(R"({"vus": 2, "duration": "1s", "hosts": "all"})"))->hosts == 0);
}

TEST_CASE("load parse: the target moves linearly through the stages, and stays at the last") {
  LoadSpec s = parsed(R"({"start": 100, "stages": [{"duration": "10s", "target": 1100},
      {"duration": "0s", "target": 50}, {"duration": "5s", "target": 50}]})");
  CHECK(s.target_at(0) == 100);
  CHECK(s.target_at(5000) == Approx(600));
  CHECK(s.target_at(9999) == Approx(1099.9));
  CHECK(s.target_at(10000) == 50);  // the 0 s stage is a jump
  CHECK(s.target_at(12000) == 50);
  CHECK(s.target_at(999999) == 50);
}

TEST_CASE("load parse: thresholds read their metric, filter, aggregate, bound and options") {
  LoadSpec s = parsed(R"({"vus": 1, "duration": "1s", "thresholds": {
      "latency{step:login}": ["p99 < 200ms", "p(99.9)<=1.5s"],
      "latency_raw": [{"threshold": "max < 800us", "abort_on_fail": true, "delay": "10s"}],
      "errors": ["rate < 1%", "count <= 10"],
      "rps": ["> 5000"],
      "iterations": [">= 100"],
      "dropped": ["rate < 0.001"]}})");
  REQUIRE(s.thresholds.size() == 8);
  auto named = [&](const std::string& name) -> const Threshold& {
    for (const Threshold& t : s.thresholds) {
      if (t.name == name) return t;
    }
    FAIL("no threshold named " << name);
    throw;
  };
  const Threshold& dropped = named("dropped: rate < 0.001");
  CHECK(dropped.metric == Metric::kDropped);
  CHECK(dropped.aggregate == Aggregate::kRate);
  CHECK(dropped.bound == Approx(0.001));
  const Threshold& errors_rate = named("errors: rate < 1%");
  CHECK(errors_rate.metric == Metric::kErrors);
  CHECK(errors_rate.bound == Approx(0.01));
  CHECK(errors_rate.holds(0.005));
  CHECK_FALSE(errors_rate.holds(0.01));
  const Threshold& errors_count = named("errors: count <= 10");
  CHECK(errors_count.aggregate == Aggregate::kCount);
  CHECK(errors_count.op == Op::kLessEqual);
  const Threshold& iterations = named("iterations: >= 100");
  CHECK(iterations.metric == Metric::kIterations);
  CHECK(iterations.aggregate == Aggregate::kCount);
  CHECK(iterations.op == Op::kGreaterEqual);
  const Threshold& p99 = named("latency{step:login}: p99 < 200ms");
  CHECK(p99.metric == Metric::kLatency);
  CHECK(p99.step == "login");
  CHECK(p99.aggregate == Aggregate::kPercentile);
  CHECK(p99.percentile == 99);
  CHECK(p99.bound == 200000);  // microseconds
  CHECK(p99.holds(199999));
  CHECK_FALSE(p99.holds(200000));
  const Threshold& p999 = named("latency{step:login}: p(99.9)<=1.5s");
  CHECK(p999.percentile == Approx(99.9));
  CHECK(p999.bound == 1500000);
  const Threshold& raw = named("latency_raw: max < 800us");
  CHECK(raw.metric == Metric::kLatencyRaw);
  CHECK(raw.aggregate == Aggregate::kMax);
  CHECK(raw.bound == 800);
  CHECK(raw.abort_on_fail);
  CHECK(raw.delay_ms == 10000);
  CHECK_FALSE(p99.abort_on_fail);
  const Threshold& rps = named("rps: > 5000");
  CHECK(rps.metric == Metric::kRps);
  CHECK(rps.aggregate == Aggregate::kValue);
  CHECK(rps.holds(5001));
  CHECK_FALSE(rps.holds(5000));
}

TEST_CASE("load parse: ws_latency and ws_errors read as latency and errors do") {
  LoadSpec s = parsed(R"({"vus": 1, "duration": "1s", "thresholds": {
      "ws_latency{step:echo}": ["p99 < 250ms"], "ws_errors": ["rate < 0.5%", "count < 3"]}})");
  REQUIRE(s.thresholds.size() == 3);
  const Threshold& rate = s.thresholds[0];  // in the order of the keys
  CHECK(rate.metric == Metric::kWsErrors);
  CHECK(rate.aggregate == Aggregate::kRate);
  CHECK(rate.bound == Approx(0.005));
  CHECK(s.thresholds[1].aggregate == Aggregate::kCount);
  const Threshold& p99 = s.thresholds[2];
  CHECK(p99.metric == Metric::kWsLatency);
  CHECK(p99.step == "echo");
  CHECK(p99.aggregate == Aggregate::kPercentile);
  CHECK(p99.bound == 250000);
  CHECK(to_string(Metric::kWsLatency) == "ws_latency");
  auto refused = parse_load(
      json::parse(R"({"vus": 1, "duration": "1s", "thresholds": {"ws_errors": ["p99 < 1s"]}})"));
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.status().message(), Catch::Contains("does not apply to this metric"));
}

TEST_CASE("load parse: a wrong load section is refused, naming the field at fault") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"([])", "load: expected an object"},
      {R"({"vus": 1, "duration": "1s", "users": 3})", "load.users: unknown field (known: model"},
      {R"({"vus": 1, "rate": 5, "duration": "1s"})", "load: give only one of \"vus\", \"rate\""},
      {R"({"model": "burst", "vus": 1})", "load.model: expected one of closed, open, held"},
      {R"({"model": "open", "vus": 1, "duration": "1s"})",
       "load.vus: not part of the open model (its target is \"rate\")"},
      {R"({"duration": "1s"})", "load: give either \"vus\" with \"duration\", or \"stages\""},
      {R"({"vus": 2, "stages": [{"duration": "1s", "target": 1}]})", "give either \"vus\""},
      {R"({"vus": 2})", "load.duration: missing"},
      {R"({"vus": 2, "duration": "1s", "hosts": 0})",
       "load.hosts: expected a number of hosts from 1 to 1000, or \"all\", got 0"},
      {R"({"vus": 2, "duration": "1s", "hosts": "some"})", "load.hosts: expected a number"},
      {R"({"vus": 0, "duration": "1s"})", "load.vus: expected a whole number from 1 to 1000000, got 0"},
      {R"({"vus": 2, "duration": "0s"})", "load.duration: expected a duration greater than 0"},
      {R"({"vus": 2, "start": 1, "duration": "1s"})", "load.start: only with \"stages\""},
      {R"({"stages": [{"duration": "1s", "target": 1}], "duration": "5s"})",
       "load.duration: not with \"stages\""},
      {R"({"stages": []})", "load.stages: expected a non-empty array"},
      {R"({"stages": [{"duration": "1s"}]})", "load.stages[0]: a stage needs"},
      {R"({"stages": [{"duration": "1s", "target": -3}]})",
       "load.stages[0].target: expected a whole number from 0 to 1000000, got -3"},
      {R"({"stages": [{"duration": "1s", "target": 0}]})", "every target is 0"},
      {R"({"vus": 2.5, "duration": "1s"})", "load.vus: expected a whole number"},
      {R"({"rate": 2.5, "duration": "1s", "max_vus": 0})", "load.max_vus: expected a whole number from 1"},
      {R"({"rate": 20000000, "duration": "1s"})", "load.rate: expected a number from 1 to 10000000"},
      {R"({"stages": [{"duration": "9d", "target": 1}]})", "more than 7 days"},
      {R"({"rate": 10, "duration": "1s", "pace": "1s"})", "load.pace: the open model's pace"},
      {R"({"connections": 10, "duration": "1s"})", "load.pace: missing"},
      {R"({"vus": 1, "duration": "1s", "max_vus": 5})", "load.max_vus: only for the open model"},
      {R"({"vus": 1, "duration": "1s", "source_addresses": ["127.0.0.2"]})",
       "load.source_addresses: only for the held model"},
      {R"({"connections": 1, "pace": "1s", "duration": "1s", "source_addresses": ["::1"]})",
       "load.source_addresses[0]: expected an IPv4 address"},
      {R"({"vus": 1, "duration": "1s", "thresholds": []})", "load.thresholds: expected an object"},
      {R"({"vus": 1, "duration": "1s", "watch": {}})", "load.watch: give \"pid\", \"url\" or both"},
      {R"({"vus": 1, "duration": "1s", "watch": {"pid": -4}})", "load.watch.pid: expected a process id"},
      {R"({"vus": 1, "duration": "1s", "watch": {"url": "https://x/m"}})",
       "load.watch.url: expected an http:// URL"},
      {R"({"vus": 1, "duration": "1s", "watch": {"url": "http://x/m", "stop_when": ["rss > 1GB"]}})",
       "load.watch.stop_when[0]: expected a comparison like \"target.rss > 1.2GB\""},
      {R"({"vus": 1, "duration": "1s", "watch": {"url": "http://x/m", "stop_when": ["target.rss > 1GB"]}})",
       "load.watch.stop_when[0]: target.rss is read from \"pid\", which is missing"},
      {R"({"vus": 1, "duration": "1s", "watch": {"pid": 9, "stop_when": ["target.heap > 1GB"]}})",
       "target.heap is not one of rss, cpu, fds, threads, and there is no \"url\""},
      {R"({"vus": 1, "duration": "1s", "watch": {"pid": 9, "stop_when": ["target.rss > lots"]}})",
       "expected a number or a size like 1.2GB, got \"lots\""},
      {R"({"vus": 1, "duration": "1s", "watch": {"pid": 9, "series": ["x"]}})",
       "load.watch.series: series are scraped from \"url\", which is missing"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"latency": "p99 < 1s"}})",
       "load.thresholds.latency: expected a non-empty array"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"latncy": ["p99 < 1s"]}})",
       "load.thresholds.latncy[0]: unknown metric"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"latency{name:x}": ["p99 < 1s"]}})",
       "expected a filter like {step:NAME}"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"rps{step:x}": ["> 1"]}})",
       "it has no step filter"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"latency": ["p99 = 1s"]}})",
       "expected a comparison"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"latency": ["< 1s"]}})",
       "expected an aggregate: p50"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"latency": ["p101 < 1s"]}})",
       "expected a percentile"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"latency": ["p99 < 200"]}})",
       "expected a duration like 200ms"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"latency": ["p99 < "]}})", "has no bound"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"latency": ["rate < 1%"]}})",
       "\"rate\" does not apply to this metric"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"errors": ["p99 < 1%"]}})",
       "does not apply"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"errors": ["rate < 2"]}})",
       "expected a rate like \"1%\""},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"iterations": ["rate > 2"]}})",
       "does not apply"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"rps": ["> lots"]}})", "expected a number"},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"rps": [{"abort_on_fail": true}]}})",
       "load.thresholds.rps[0]: missing \"threshold\""},
      {R"({"vus": 1, "duration": "1s", "thresholds": {"rps": [{"threshold": "> 1",
          "abort_on_fail": "yes"}]}})", "load.thresholds.rps[0].abort_on_fail: expected true"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    auto r = parse_load(json::parse(text));
    REQUIRE_FALSE(r);
    CHECK_THAT(r.status().message(), Catch::Contains(message));
  }
}

TEST_CASE("load parse: watch reads a pid, a metrics URL, its series and stop_when conditions") {
  auto r = corral::load::parse_load(json::parse(R"({"connections": 10, "pace": "1s",
      "duration": "1m", "watch": {"pid": 4242, "url": "http://127.0.0.1:9100/metrics",
      "series": ["up"], "stop_when": ["target.rss > 1.5GB", "target.cpu >= 1.5",
                                      "target.nodejs_heap_size_used_bytes > 120MB"]}})"));
  REQUIRE(r);
  const corral::load::Watch& w = r->watch;
  CHECK(w.pid == 4242);
  CHECK(w.url == "http://127.0.0.1:9100/metrics");
  // A series a condition names is scraped too.
  CHECK(w.series == std::vector<std::string>{"up", "nodejs_heap_size_used_bytes"});
  REQUIRE(w.stop_when.size() == 3);
  CHECK(w.stop_when[0].name == "target.rss > 1.5GB");
  CHECK(w.stop_when[0].metric == "rss");
  CHECK(w.stop_when[0].bound == 1.5 * 1024 * 1024 * 1024);
  CHECK(w.stop_when[0].holds(1.6 * 1024 * 1024 * 1024));
  CHECK_FALSE(w.stop_when[0].holds(1.5 * 1024 * 1024 * 1024));
  CHECK(w.stop_when[1].bound == 1.5);
  CHECK(w.stop_when[1].holds(1.5));
  CHECK(w.stop_when[2].bound == 120.0 * 1024 * 1024);
}

TEST_CASE("load parse: target reads a command, its directory, environment and ready check") {
  LoadSpec s = parsed(R"({"connections": 10, "pace": "1s", "duration": "1m",
      "target": {"cmd": ["node", "--max-old-space-size=128", "server.js"], "cwd": "/srv",
                 "env": {"PORT": "8080"}, "ready": {"url": "http://127.0.0.1:8080/health"},
                 "ready_timeout": "30s", "stop_grace": "2s"},
      "watch": {"stop_when": ["target.rss > 1GB"]}})");
  const TargetCommand& t = s.target;
  REQUIRE(t.any());
  CHECK(t.cmd == std::vector<std::string>{"node", "--max-old-space-size=128", "server.js"});
  CHECK(t.cwd == "/srv");
  CHECK(t.env == std::vector<std::pair<std::string, std::string>>{{"PORT", "8080"}});
  CHECK(t.ready == TargetCommand::Ready::kUrl);
  CHECK(t.url == "http://127.0.0.1:8080/health");
  CHECK(t.ready_timeout_ms == 30000);
  CHECK(t.stop_grace_ms == 2000);
  // The target's own pid is watched: target.rss needs no "pid".
  REQUIRE(s.watch.stop_when.size() == 1);
  CHECK(s.watch.pid == 0);

  TargetCommand log = parsed(R"({"vus": 1, "duration": "1s",
      "target": {"cmd": ["./server"], "ready": {"log": "listening on [0-9]+"}}})")
                          .target;
  CHECK(log.ready == TargetCommand::Ready::kLog);
  CHECK(log.log == "listening on [0-9]+");
  CHECK(log.ready_timeout_ms == 10000);
  CHECK(log.stop_grace_ms == 5000);
  TargetCommand port = parsed(R"({"vus": 1, "duration": "1s",
      "target": {"cmd": ["./server"], "ready": {"port": 8080}}})")
                           .target;
  CHECK(port.ready == TargetCommand::Ready::kPort);
  CHECK(port.port == 8080);
  CHECK(parsed(R"({"vus": 1, "duration": "1s", "target": {"cmd": ["x"]}})").target.ready ==
        TargetCommand::Ready::kStarted);
  CHECK_FALSE(parsed(R"({"vus": 1, "duration": "1s"})").target.any());
}

TEST_CASE("load parse: a wrong target is refused, naming the field at fault") {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"target": []})", "load.target: expected an object with \"cmd\""},
      {R"({"target": {"ready": {"port": 1}}})", "load.target.cmd: missing"},
      {R"({"target": {"cmd": "node server.js"}})", "load.target.cmd: expected the program"},
      {R"({"target": {"cmd": []}})", "load.target.cmd: expected the program"},
      {R"({"target": {"cmd": ["node", 1]}})", "load.target.cmd[1]: expected a string"},
      {R"({"target": {"cmd": [""]}})", "load.target.cmd[0]: the program's name is empty"},
      {R"({"target": {"cmd": ["x"], "comand": 1}})", "load.target.comand: unknown field"},
      {R"({"target": {"cmd": ["x"], "env": {"A=B": "1"}}})", "load.target.env.A=B: an environment"},
      {R"({"target": {"cmd": ["x"], "env": {"A": 1}}})", "load.target.env.A: expected a string"},
      {R"({"target": {"cmd": ["x"], "ready": {}}})", "load.target.ready: expected one of"},
      {R"({"target": {"cmd": ["x"], "ready": {"port": 1, "log": "x"}}})", "expected one of"},
      {R"({"target": {"cmd": ["x"], "ready": {"prot": 1}}})",
       "load.target.ready.prot: unknown field (did you mean \"port\"?)"},
      {R"({"target": {"cmd": ["x"], "ready": {"port": 70000}}})",
       "load.target.ready.port: expected a port from 1 to 65535"},
      {R"({"target": {"cmd": ["x"], "ready": {"url": "https://x/"}}})",
       "load.target.ready.url: expected an http:// URL"},
      {R"({"target": {"cmd": ["x"], "ready": {"log": "(unclosed"}}})",
       "load.target.ready.log: not a valid pattern"},
      {R"({"target": {"cmd": ["x"], "ready_timeout": "0s"}})", "load.target.ready_timeout"},
      {R"({"target": {"cmd": ["x"]}, "watch": {"pid": 4}})", "load.watch.pid: not with \"target\""},
      {R"({"target": {"cmd": ["x"]}, "hosts": 2})",
       "load.target: a target corral starts runs on one host"},
  };
  for (const auto& [target, message] : cases) {
    json j = json::parse(target);
    j["vus"] = 1;
    j["duration"] = "1s";
    INFO(j.dump());
    auto r = parse_load(j);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.status().message(), Catch::Contains(message));
  }
}
