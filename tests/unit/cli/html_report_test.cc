// The HTML report of a load test: self-contained, escaped, one chart per measure.
#include <catch2/catch.hpp>

#include <regex>

#include "cli/html_report.h"

using nlohmann::json;

namespace {

json series(int seconds) {
  json out = json::array();
  for (int t = 0; t < seconds; ++t) {
    out.push_back({{"t", t}, {"vus", 10 * t}, {"connections", 10 * t}, {"rps", 100 * t},
                   {"errors", t == 3 ? 5 : 0}, {"p50", 1.5}, {"p90", 2.5}, {"p99", 4.0 + t}});
  }
  return out;
}

json test_json() {
  return {{"id", "l7-0a0a"},
          {"name", "held <script>alert(1)</script> & co"},
          {"state", "failed"},
          {"reason", ""},
          {"model", "held"},
          {"load", {{"connections", 50}, {"duration", "5s"}, {"pace", "1s"}}},
          {"elapsed_s", 5.0},
          {"duration_s", 5.0},
          {"workers", 2},
          {"vus_max", 40},
          {"requests", 1000},
          {"rps", 200.0},
          {"iterations", {{"passed", 995}, {"failed", 5}, {"dropped", 0}, {"interrupted", 0}}},
          {"errors", {{"count", 5}, {"rate", 0.005}, {"status", 5}}},
          {"latency", {{"p50", 1.5}, {"p99", 8.0}}},
          {"thresholds",
           json::array({{{"name", "latency: p99 < 5ms"}, {"value", 8.0}, {"ok", false}}})},
          {"reasons", {{"expect: status was <503>", 4}, {"transport error: reset", 1}}},
          {"reason_traces", {{"expect: status was <503>", "0af7651916cd43dd8448eb211c80319c"}}},
          {"target",
           {{"pid", 42},
            {"rss_max", 3e6},
            {"series", json::array({{{"t", 0}, {"rss", 1e6}}, {{"t", 1}, {"rss", 3e6}}})}}},
          {"series", series(5)}};
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("html report: the summary, the thresholds and four charts, escaped and offline") {
  const std::string html = corral::cli::render_load_html(*corral::api::load_from_json(test_json()));
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_THAT(html, Catch::Contains("held &lt;script&gt;alert(1)&lt;/script&gt; &amp; co"));
  CHECK(html.find("<script") == std::string::npos);
  // Nothing to fetch: no src, no link, no URL but the SVG namespace.
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(count(html, "http") == count(html, "http://www.w3.org/2000/svg"));
  CHECK_THAT(html, Catch::Contains("<tr class=\"crossed\"><td>CROSSED</td><td>latency: p99 &lt; 5ms"
                                   "</td><td>8.00ms</td></tr>"));
  CHECK(count(html, "<svg class=\"chart\"") == 4);
  for (const char* chart : {"rps", "latency", "load", "target"}) {
    CHECK_THAT(html, Catch::Contains(std::string("data-chart=\"") + chart + "\""));
  }
  // Every second is a point of each line, but the last one, cut short by the test's end.
  std::smatch m;
  REQUIRE(std::regex_search(html, m, std::regex("data-series=\"p99\"[^>]*points=\"([^\"]*)\"")));
  CHECK(count(m[1].str(), ",") == 4);
  CHECK(count(html, "data-series=\"connections\"") == 1);  // held: connections beside VUs
  // Why iterations failed, each with a trace of one of them when they carried one.
  CHECK_THAT(html, Catch::Contains("<tr><td>4</td><td>expect: status was &lt;503&gt;</td><td><code>"
                                   "0af7651916cd43dd8448eb211c80319c</code></td></tr>"));
  CHECK_THAT(html, Catch::Contains("<tr><td>1</td><td>transport error: reset</td><td><code>-"
                                   "</code></td></tr>"));
}

TEST_CASE("html report: a chart's scale rounds up and its points stay inside the frame") {
  const std::string svg = corral::cli::svg_chart(
      "x", "T", {0, 1, 2}, {{"a", "#000", {0, 730, 1460}}},
      [](double v) { return std::to_string(static_cast<int>(v)); });
  CHECK_THAT(svg, Catch::Contains(">2000</text>"));  // 1460 rounds up to 2000
  CHECK_THAT(svg, Catch::Contains(">1000</text>"));
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, std::regex("points=\"([^\"]*)\"")));
  // x from 64 to 844; y from 192 (0) up 164 px to 28 (2000).
  CHECK(m[1].str() == "64.0,192.0 454.0,132.1 844.0,72.3");
}

TEST_CASE("html report: cards on top, and the test's events marked on every chart and listed") {
  json j = test_json();
  j["state"] = "aborted";
  j["reason"] = "the target (pid 42) was killed by SIGABRT at 3.5 s";
  j["events"] =
      json::array({{{"t", 2.0}, {"kind", "stage"}, {"text", "stage 2 of 2: to 50 connections"}},
                   {{"t", 3.5}, {"kind", "target"}, {"text", "the target <died>"}}});
  j["target"]["process"] = {{"cmd", {"node", "server.js"}},
                            {"state", "died"},
                            {"signal", "SIGABRT"},
                            {"rss_peak", 196608000},
                            {"cause", "JavaScript heap out of memory"}};
  const std::string html = corral::cli::render_load_html(*corral::api::load_from_json(j));
  CHECK(count(html, "<div class=\"card ") == 6);
  CHECK_THAT(html, Catch::Contains("<div class=\"card bad\"><div class=\"title\">verdict</div>"
                                   "<div class=\"value\">aborted</div>"));
  // Where it broke: the load of the last second before the event, which was not a stage.
  CHECK_THAT(
      html, Catch::Contains("<div class=\"title\">broke at</div><div class=\"value\">30 "
                            "connections</div><div class=\"note\">3.5 s: the target &lt;died&gt;"));
  CHECK_THAT(html,
             Catch::Contains("<div class=\"title\">target peak RSS</div><div class=\"value\">"
                             "187.5mb</div><div class=\"note\">the target died: JavaScript heap"));
  // Both events on each of the four charts, which reach as far as the last (in the cut second).
  CHECK(count(html, "data-mark=\"stage\"") == 4);
  CHECK(count(html, "data-mark=\"target\"") == 4);
  CHECK_THAT(html, Catch::Contains("<title>the target &lt;died&gt;</title>"));
  CHECK(count(html, "<tr data-event=") == 2);
  CHECK(html.find("<h2>Details</h2>") > html.find("<table class=\"events\">"));
}
