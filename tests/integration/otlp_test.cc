// Exporting spans over OTLP/HTTP JSON, as a user with a collector sees it: a real daemon runs a
// scenario with "otlp_endpoint" against a server on 127.0.0.1 that is also the collector; every
// request the server saw is one client span there, with the trace and span ids of the
// traceparent the server got, the step's name, the status, and an error status for a 503. A
// load test's requests are exported the same way.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>

#include "shared/proc.h"
#include "shared/trace_context.h"
#include "tests/support/harness.h"
#include "tests/support/harness_receiver.h"
#include "tests/support/harness_runs.h"

namespace corral::test {
namespace {

// Every span of every export the collector got.
std::vector<Json> spans_at(const WebhookReceiver& collector) {
  std::vector<Json> out;
  for (const Json& body : collector.bodies("/v1/traces")) {
    for (const Json& rs : body.value("resourceSpans", Json::array())) {
      for (const Json& ss : rs.value("scopeSpans", Json::array())) {
        for (const Json& s : ss.value("spans", Json::array())) out.push_back(s);
      }
    }
  }
  return out;
}

Json attrs(const Json& span) {
  Json out = Json::object();
  for (const Json& a : span["attributes"]) out[a["key"].get<std::string>()] = a["value"];
  return out;
}

// The traceparent header of each request the server got under `prefix`.
std::vector<std::string> traceparents(const WebhookReceiver& server, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& r : server.received()) {
    if (!r.path.starts_with(prefix)) continue;
    const size_t at = r.head.find("\r\ntraceparent: ");
    out.push_back(at == std::string::npos ? "" : r.head.substr(at + 15, 55));
  }
  return out;
}

std::string id_pair(const std::string& trace, const std::string& span) {
  return "00-" + trace + "-" + span + "-01";
}

}  // namespace

TEST_CASE("otlp: each request of a run and of a load test is a span at the collector") {
  // The server under test and the collector, one process: /api/fail answers 503.
  WebhookReceiver server(
      [](const std::string& path, size_t) { return path == "/api/fail" ? 503 : 200; });
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const Json scenario = {
      {"name", "exported"},
      {"otlp_endpoint", server.url("")},  // an origin: the spans go to /v1/traces
      {"vars", {{"base", server.url("/api")}}},
      {"steps", Json::array({{{"name", "create"}, {"request", {{"url", "{{base}}/ok"}}}},
                             {{"name", "refused"},
                              {"request", {{"url", "{{base}}/fail"}}},
                              {"expect", {{"status", 503}}}}})}};
  const int64_t before_ns = static_cast<int64_t>(unix_ms_now()) * 1'000'000;
  auto r = d.api("POST", "/runs", Json{{"scenario", scenario}, {"instances", 3}}.dump());
  REQUIRE(r.status == 201);
  const std::string id = r.json["run"];
  d.wait_until([&] { return spans_at(server).size() >= 6; }, seconds(20),
               "6 spans at the collector");
  const int64_t after_ns = static_cast<int64_t>(unix_ms_now()) * 1'000'000;

  // Each span names a request the server saw, by the traceparent it carried.
  const std::vector<std::string> sent = traceparents(server, "/api/");
  REQUIRE(sent.size() == 6);
  std::set<std::string> seen(sent.begin(), sent.end());
  const std::vector<Json> spans = spans_at(server);
  CHECK(spans.size() == 6);
  std::map<std::string, int> per_step;
  for (const Json& s : spans) {
    INFO(s.dump());
    const Json a = attrs(s);
    CHECK(seen.count(id_pair(s["traceId"], s["spanId"])) == 1);
    const auto instance = std::stoul(a["corral.instance"]["intValue"].get<std::string>());
    CHECK(s["traceId"] == instance_trace(id, static_cast<uint32_t>(instance)));
    CHECK(a["corral.run"]["stringValue"] == id);
    CHECK(s["kind"] == 3);
    const int64_t start = std::stoll(s["startTimeUnixNano"].get<std::string>());
    const int64_t end = std::stoll(s["endTimeUnixNano"].get<std::string>());
    CHECK(before_ns <= start);
    CHECK(start <= end);
    CHECK(end <= after_ns);
    ++per_step[s["name"]];
    if (s["name"] == "refused") {
      CHECK(a["http.response.status_code"]["intValue"] == "503");
      CHECK(s["status"]["code"] == 2);
      CHECK(a["url.full"]["stringValue"] == server.url("/api/fail"));
    } else {
      CHECK(a["http.response.status_code"]["intValue"] == "200");
      CHECK_FALSE(s.contains("status"));
    }
  }
  CHECK(per_step == std::map<std::string, int>{{"create", 3}, {"refused", 3}});
  wait_run_finished(d, id, seconds(20));

  // A load test: 40 iterations of the same two steps, each iteration a trace of its own, each
  // failing at its second step; the failure's reason names one of those traces.
  Json load = scenario;
  load["name"] = "exported load";
  load["steps"][1]["expect"] = {{"status", 200}};
  load["load"] = {{"rate", 40}, {"duration", "1s"}, {"max_vus", 10}};
  std::ofstream(home.file("load.json")) << load.dump();
  CliResult lr = run_cli({"load", home.file("load.json"), "--out", home.file("load-out.json")},
                         home.path(), {}, seconds(60));
  INFO(lr.describe());
  REQUIRE((lr.exit_code == 0 || lr.exit_code == 1));
  const Json out = Json::parse(std::ifstream(home.file("load-out.json")));
  const std::string why = "expect: status was 503, expected 200";
  CHECK(out["reasons"][why] == 40);
  REQUIRE(out["reason_traces"].contains(why));
  CHECK_THAT(lr.out, Catch::Contains("  40  " + why + "  (trace " +
                                     out["reason_traces"][why].get<std::string>() + ")\n"));
  d.wait_until([&] { return spans_at(server).size() >= 6 + 80; }, seconds(20),
               "80 more spans at the collector");
  const std::vector<std::string> all = traceparents(server, "/api/");
  seen = std::set<std::string>(all.begin(), all.end());
  CHECK(seen.size() == 6 + 80);
  std::map<std::string, int> per_trace;
  for (const Json& s : spans_at(server)) {
    if (attrs(s)["corral.run"]["stringValue"] == id) continue;
    CHECK(seen.count(id_pair(s["traceId"], s["spanId"])) == 1);
    ++per_trace[s["traceId"]];
  }
  CHECK(per_trace.size() == 40);  // a trace per iteration, two spans each
  for (const auto& [trace, n] : per_trace) CHECK(n == 2);
  CHECK(per_trace.count(out["reason_traces"][why]) == 1);
}

}  // namespace corral::test
