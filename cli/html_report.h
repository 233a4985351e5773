// A load test as one self-contained HTML file (`corral load --html FILE`): cards for the verdict,
// the throughput, the latency, the errors, where the test broke and the target's peak; each
// threshold; charts that corral draws as inline SVG from the test's per-second series (requests
// and errors per second, latency (p50, p90, p99), VUs and connections, the watched target's
// RSS), with the test's events (stage changes, thresholds crossed, its end early, the target's
// end) as numbered vertical lines, listed under them; and the summary's details. No script, and
// nothing loaded from elsewhere: the file opens offline. Pure function over GET /loads/<id>
// (with its series); any thread.
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

// A moment marked on a chart: a dashed vertical line at `x`, numbered `label`, its `text` on
// hover; `kind` colours it (an api::LoadEvent's).
struct ChartMark {
  double x = 0;
  std::string label, kind, text;
};

// An SVG line chart (data-chart=`id`), y from 0 to a round number above the largest value,
// labelled by `label(y)`; x in seconds. Lines shorter than `xs` are drawn as far as they go;
// x reaches as far as the last mark, and marks before the first x are left out.
std::string svg_chart(const std::string& id, const std::string& title,
                      const std::vector<double>& xs, const std::vector<ChartLine>& lines,
                      std::string (*label)(double), const std::vector<ChartMark>& marks = {});

}  // namespace corral::cli
