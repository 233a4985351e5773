// A load test as one self-contained HTML file (`corral load --html FILE`): the summary, each
// threshold, what the watched target did, and charts that corral draws as inline SVG from the
// test's per-second series: requests and errors per second, latency (p50, p90, p99), VUs and
// connections, and the watched target's RSS. No script, and nothing loaded from elsewhere: the
// file opens offline. Pure function over GET /loads/<id> (with its series); any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/api/loads.h"

namespace corral::cli {

std::string render_load_html(const api::LoadAnswer& test);

// One line of a chart: its name in the legend, its colour, and a value per x.
struct ChartLine {
  std::string name;
  std::string color;
  std::vector<double> ys;
};

// An SVG line chart (data-chart=`id`), y from 0 to a round number above the largest value,
// labelled by `label(y)`; x in seconds. Lines shorter than `xs` are drawn as far as they go.
std::string svg_chart(const std::string& id, const std::string& title, const std::vector<double>& xs,
                      const std::vector<ChartLine>& lines, std::string (*label)(double));

}  // namespace corral::cli
