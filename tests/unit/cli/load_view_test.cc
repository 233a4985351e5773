// How `corral load` prints a test: the live line and the summary.
#include <catch2/catch.hpp>

#include "cli/load_view.h"

using corral::cli::render_load_progress;
using corral::cli::render_load_summary;
using nlohmann::json;

namespace {

json latency(double p50, double p99) {
  return {{"p50", p50}, {"p90", p50}, {"p95", p99}, {"p99", p99}, {"p99.9", p99}, {"max", p99}};
}

json test_json(const char* state) {
  return {{"id", "l3-abcd"},
          {"name", "checkout"},
          {"state", state},
          {"reason", ""},
          {"model", "open"},
          {"load", {{"rate", 2000}, {"duration", "30s"}, {"max_vus", 100}}},
          {"elapsed_s", 12.0},
          {"duration_s", 30.0},
          {"workers", 2},
          {"vus_max", 18},
          {"requests", 24000},
          {"rps", 2000.0},
          {"bytes", 1u << 20},
          {"iterations", {{"passed", 23990}, {"failed", 10}, {"dropped", 3}, {"interrupted", 0}}},
          {"errors",
           {{"count", 10},
            {"rate", 10.0 / 24000},
            {"status", 7},
            {"transport", 0},
            {"timeout", 3},
            {"expect", 0}}},
          {"corrected", true},
          {"latency", latency(1.86, 3.01)},
          {"latency_raw", latency(0.412, 1.9)},
          {"start_lateness",
           [] {
             json l = latency(0.004, 0.21);
             l["count"] = 24000;
             l["over_5ms"] = 0;
             return l;
           }()},
          {"steps", json::array({{{"index", 0}, {"name", "get"}}})},
          {"thresholds",
           json::array({{{"name", "latency: p99 < 2ms"}, {"value", 3.01}, {"ok", false}},
                        {{"name", "errors: rate < 1%"}, {"value", 0.0004}, {"ok", true}}})},
          {"reasons", {{"expect: status was 503", 7}}},
          {"series", json::array({{{"t", 11},
                                   {"vus", 17},
                                   {"rps", 1999},
                                   {"errors", 20},
                                   {"p99", 2.5},
                                   {"dropped", 0}}})}};
}

// The answer as the CLI reads it.
corral::api::LoadAnswer read(const json& j) {
  auto a = corral::api::load_from_json(j);
  INFO((a ? "" : a.status().message()));
  REQUIRE(a.is_ok());
  return *a;
}

}  // namespace

TEST_CASE("load view: the live line shows the last complete second") {
  CHECK(render_load_progress(read(test_json("running"))) ==
        "l3-abcd  running  12s/30s  vus 17  rps 1999  p99 2.50ms  errors 1.00%");
}

TEST_CASE("load view: once ended, the line shows the whole test") {
  CHECK(render_load_progress(read(test_json("failed"))) ==
        "l3-abcd  failed  12s/30s  vus 18  rps 2000  p99 3.01ms  errors 0.04%  dropped 3");
}

TEST_CASE("load view: the summary has the model, counts, both latencies and each threshold") {
  const std::string s = render_load_summary(read(test_json("failed")));
  CHECK_THAT(s, Catch::Contains("model      : open, 2000/s for 30s (max 100 VUs)\n"));
  CHECK_THAT(s, Catch::Contains("state      : failed\n"));
  CHECK_THAT(s, Catch::Contains("requests   : 24000 (2000.0/s), 1.0mb received\n"));
  CHECK_THAT(s, Catch::Contains("iterations : 23990 passed, 10 failed, 3 dropped, 0 interrupted\n"));
  CHECK_THAT(s, Catch::Contains("errors     : 10 (0.04%): 7 status, 3 timeout\n"));
  CHECK_THAT(s, Catch::Contains("latency    : p50 1.86ms  p90 1.86ms  p95 3.01ms  p99 3.01ms  "
                                "p99.9 3.01ms  max 3.01ms  (from the intended start)\n"));
  CHECK_THAT(s, Catch::Contains("  raw      : p50 0.412ms"));
  CHECK_THAT(s, Catch::Contains("  7  expect: status was 503\n"));
  CHECK_THAT(s, Catch::Contains("  CROSSED latency: p99 < 2ms  (3.01ms)\n"));
  CHECK_THAT(s, Catch::Contains("  ok      errors: rate < 1%  (0.04%)\n"));
}

TEST_CASE("load view: WebSocket tests show their sockets, close codes and messages") {
  json t = test_json("running");
  t["model"] = "held";
  t["connections"] = {{"open", 98},  {"max", 100},  {"opened", 102},
                      {"failed", 1}, {"closed", 4}, {"close_codes", {{"1001", 3}, {"1006", 1}}}};
  t["messages"] = {
      {"sent", 1200}, {"received", 1190}, {"sent_per_s", 100.0}, {"received_per_s", 99.2}};
  t["series"][0]["connections"] = 98;
  t["series"][0]["sent"] = 100;
  t["series"][0]["received"] = 99;
  const auto a = read(t);
  CHECK(render_load_progress(a) ==
        "l3-abcd  running  12s/30s  vus 17  rps 1999  p99 2.50ms  errors 1.00%  conns 98  "
        "msgs out 100/s in 99/s");
  const std::string s = render_load_summary(a);
  CHECK_THAT(s, Catch::Contains("connections: up to 100 open; 102 opened, 1 failed to connect, 4 "
                                "lost after connecting (1001 x3, 1006 x1)\n"));
  CHECK_THAT(s, Catch::Contains("messages   : 1200 sent (100.0/s), 1190 received (99.2/s)\n"));
  t["target"] = {{"pid", 4242},
                 {"rss_max", 1e8},
                 {"event",
                  {{"event", "died"},
                   {"t", 23.8},
                   {"load",
                    {{"vus", 2299},
                     {"connections", 2299},
                     {"sent", 2290},
                     {"rps", 4726},
                     {"p99", 15.0},
                     {"errors", 0}}}}}};
  CHECK_THAT(render_load_summary(read(t)),
             Catch::Contains("  the process was gone at 23.8s, under 2299 VUs / 2299 connections, "
                             "2290 messages/s out, 4726 requests/s, p99 15.0ms, 0 errors/s\n"));
}

TEST_CASE("load view: corral's own lateness is shown, and a warning when it is in the numbers") {
  json t = test_json("passed");
  const std::string quiet = render_load_summary(read(t));
  CHECK_THAT(quiet,
             Catch::Contains("  late     : p50 0.004ms  p90 0.004ms  p95 0.210ms  p99 0.210ms  "
                             "p99.9 0.210ms  max 0.210ms  (corral's own, starting iterations)\n"));
  CHECK_THAT(quiet, !Catch::Contains("warning"));
  t["start_lateness"]["over_5ms"] = 240;  // exactly 1 %: no warning yet
  CHECK_THAT(render_load_summary(read(t)), !Catch::Contains("warning"));
  t["start_lateness"]["over_5ms"] = 744;
  CHECK_THAT(render_load_summary(read(t)),
             Catch::Contains("warning    : corral started 3.10% of iterations more than 5ms late"));
}

TEST_CASE("load view: JUnit has a testcase per threshold and one for the test") {
  json t = test_json("failed");
  t["created"] = "2026-12-02T09:00:00.000Z";
  const std::string x = corral::cli::render_load_junit(read(t));
  CHECK_THAT(x, Catch::Contains("<testsuite name=\"checkout (l3-abcd)\" tests=\"3\" failures=\"1\" "
                                "errors=\"0\" skipped=\"0\" time=\"12.000\" "
                                "timestamp=\"2026-12-02T09:00:00.000Z\">"));
  CHECK_THAT(x, Catch::Contains("<testcase classname=\"checkout.thresholds\" name=\"latency: p99 "
                                "&lt; 2ms\" time=\"12.000\">\n      <failure message=\"crossed: "
                                "the value was 3.01ms\" type=\"failed\">"));
  CHECK_THAT(x, Catch::Contains("<testcase classname=\"checkout.thresholds\" name=\"errors: rate "
                                "&lt; 1%\" time=\"12.000\"/>"));
  CHECK_THAT(x, Catch::Contains("<testcase classname=\"checkout.load\" name=\"load test\" "
                                "time=\"12.000\"/>"));

  // Stopped or aborted: the test itself fails, with its reason, even when no threshold did.
  json aborted = test_json("aborted");
  aborted["reason"] = "aborted: errors: rate < 1% crossed";
  aborted["thresholds"] = json::array();
  const std::string y = corral::cli::render_load_junit(read(aborted));
  CHECK_THAT(y, Catch::Contains("tests=\"1\" failures=\"1\""));
  CHECK_THAT(y, Catch::Contains("<failure message=\"aborted: errors: rate &lt; 1% crossed\" "
                                "type=\"failed\">the load test ended aborted: aborted: errors"));
}

TEST_CASE("load view: the loads table has a row per test") {
  json t = test_json("passed");
  t["created"] = "2026-12-02T09:00:00.000Z";
  const std::string table =
      corral::cli::render_loads_table({read(t)}, corral::cli::TableStyle::kAscii);
  CHECK_THAT(table, Catch::Contains("| load    | scenario | model | state  | workers | elapsed | requests"));
  CHECK_THAT(table, Catch::Contains("| l3-abcd | checkout | open  | passed | 2       | 12s     | 24000    | 2000"
                                    " | 3.01ms | 0.04%  | 2026-12-02T09:00:00.000Z |"));
}

TEST_CASE("load view: a staged test's live line says which stage runs") {
  json t = test_json("running");
  t["load"] = {{"model", "open"},
               {"stages", json::array({{{"duration", "10s"}, {"target", 100}},
                                       {{"duration", "5s"}, {"target", 100}},
                                       {{"duration", "15s"}, {"target", 0}}})}};
  CHECK_THAT(corral::cli::render_load_progress(read(t)),
             Catch::Contains("12s/30s  stage 2/3  vus 17"));
  t["elapsed_s"] = 16.0;
  CHECK_THAT(corral::cli::render_load_progress(read(t)), Catch::Contains("  stage 3/3  "));
  t["state"] = "passed";
  CHECK(corral::cli::render_load_progress(read(t)).find("stage") == std::string::npos);
}

TEST_CASE("load view: a test over hosts names them, on its origin and on the other hosts") {
  json origin = test_json("passed");
  origin["cluster"] = {{"hosts", 3}, {"share", 0}, {"origin", nullptr},
                       {"others", json::array({{{"host", "b/1"}, {"state", "done"}},
                                               {{"host", "c/2"}, {"state", "running"}}})}};
  CHECK_THAT(render_load_summary(read(origin)),
             Catch::Contains("hosts      : 3 (this one the origin); b/1 done; c/2 running\n"));
  json share = test_json("passed");
  share["cluster"] = {{"hosts", 3}, {"share", 2}, {"origin", "a/0"}, {"others", json::array()}};
  CHECK_THAT(render_load_summary(read(share)),
             Catch::Contains("hosts      : 3, this host's share 2 of the test of host a/0\n"));
  CHECK_THAT(render_load_summary(read(test_json("passed"))), !Catch::Contains("hosts      :"));
}

TEST_CASE("load view: a target corral started shows how it ended, its cause and last lines") {
  json t = test_json("aborted");
  t["target"] = {{"pid", 4242},
                 {"rss_max", 1.8e8},
                 {"event",
                  {{"event", "died"},
                   {"how", "was killed by SIGABRT"},
                   {"t", 27.2},
                   {"load", {{"vus", 2024}, {"connections", 2024}, {"rps", 1901}, {"p99", 42.7}}}}},
                 {"process",
                  {{"cmd", {"node", "--max-old-space-size=128", "server.js"}},
                   {"state", "died"},
                   {"signal", "SIGABRT"},
                   {"ended_s", 27.2},
                   {"rss_peak", 196608000},
                   {"cause", "FATAL ERROR: Reached heap limit - JavaScript heap out of memory"},
                   {"lines",
                    {{{"stream", "stdout"}, {"text", "listening on 127.0.0.1:18787"}},
                     {{"stream", "stderr"}, {"text", "<--- JS stacktrace --->"}}}}}}};
  const std::string s = render_load_summary(read(t));
  CHECK_THAT(s, Catch::Contains("  the process was killed by SIGABRT at 27.2s, under 2024 VUs / "
                                "2024 connections"));
  CHECK_THAT(s, Catch::Contains("  started  : node --max-old-space-size=128 server.js\n"
                                "  died     : killed by SIGABRT at 27.2s, peak rss 187.5mb\n"
                                "  cause    : FATAL ERROR: Reached heap limit - JavaScript heap "
                                "out of memory\n"
                                "  last lines:\n"
                                "    stdout| listening on 127.0.0.1:18787\n"
                                "    stderr| <--- JS stacktrace --->\n"));
  t["target"]["event"] = nullptr;
  t["target"]["process"] = {{"cmd", {"./server"}},
                            {"state", "stopped"},
                            {"exit_code", 0},
                            {"rss_peak", 1 << 20},
                            {"lines", json::array()}};
  CHECK_THAT(render_load_summary(read(t)),
             Catch::Contains("  started  : ./server\n"
                             "  stopped by corral after the test (exit code 0), peak rss 1.0mb\n"));
  CHECK_THAT(render_load_summary(read(t)), !Catch::Contains("run out of memory"));
  t["target"]["process"]["exit_code"] = nullptr;
  t["target"]["process"]["signal"] = "SIGABRT";
  t["target"]["process"]["cause"] = "FATAL ERROR: JavaScript heap out of memory";
  CHECK_THAT(render_load_summary(read(t)),
             Catch::Contains("  stopped by corral after the test (killed by SIGABRT), peak rss "
                             "1.0mb\n  but it had run out of memory: FATAL ERROR: JavaScript "
                             "heap out of memory\n"));
}

TEST_CASE("load summary: a slow request shows its status, or its outcome when none came") {
  using corral::cli::slow_request_text;
  CHECK(slow_request_text({12, 1, "pay", 48.2, 200, "ok", "4bf92f3577b34da6a3ce929d0e0e4736"}) ==
        "48.2ms  step 1 pay  200  at 12s  trace 4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(slow_request_text({3, 0, "", 30000, 0, "timeout", ""}) == "30.00s  step 0  timeout  at 3s");
  CHECK(slow_request_text({21, 0, "open", 1370, 0, "ok", ""}) == "1.37s  step 0 open  ok  at 21s");
}
