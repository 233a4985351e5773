#include "cli/html_report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "cli/format.h"
#include "cli/junit.h"
#include "cli/load_view.h"

namespace corral::cli {
namespace {

using nlohmann::json;

constexpr double kWidth = 860, kHeight = 220;
constexpr double kLeft = 64, kRight = 16, kTop = 28, kBottom = 28;

std::string esc(const std::string& s) { return xml_escape(s); }

// An event's colour: grey for a stage, amber for a threshold, red for an end.
const char* mark_colour(const std::string& kind) {
  if (kind == "stage") return "#888888";
  if (kind == "threshold") return "#e08e0b";
  return "#b00000";
}

std::string num(double v) { return fixed(v, 1); }

// The smallest of 1, 2, 5 x 10^k that is at least `v` (at least 1e-9).
double round_up(double v) {
  if (!(v > 0)) return 1;
  double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

std::string count_label(double v) { return fixed(v, v >= 10 || v == std::floor(v) ? 0 : 1); }
std::string ms_label(double v) { return latency_text(v); }
std::string bytes_label(double v) { return human_bytes(static_cast<uint64_t>(std::max(0.0, v))); }

std::vector<double> column(const json& series, const char* key, double scale = 1) {
  std::vector<double> out;
  if (!series.is_array()) return out;
  for (const json& s : series) out.push_back(json_number(s, key) * scale);
  return out;
}

void row(std::ostringstream& out, const std::string& key, const std::string& value) {
  out << "<tr><th>" << esc(key) << "</th><td>" << esc(value) << "</td></tr>\n";
}

// The summary's lines (render_load_summary), as a table of "key : value" rows.
void summary_table(std::ostringstream& out, const api::LoadAnswer& test) {
  std::istringstream lines(render_load_summary(test));
  std::string line;
  bool thresholds = false;  // they get a table of their own
  out << "<table class=\"summary\">\n";
  while (std::getline(lines, line)) {
    if (line.rfind("  ", 0) == 0) {  // a line under the one before
      if (!thresholds) row(out, "", line.substr(2));
      continue;
    }
    if (line.size() >= 2 && line.compare(line.size() - 2, 2, " :") == 0)
      line += " ";  // "failures   :"
    size_t colon = line.find(" : ");
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(' ') + 1);
    thresholds = key == "thresholds";
    if (!thresholds) row(out, key, line.substr(colon + 3));
  }
  out << "</table>\n";
}

void thresholds_table(std::ostringstream& out, const api::LoadAnswer& test) {
  if (test.thresholds.empty()) return;
  out << "<h2>Thresholds</h2>\n<table class=\"thresholds\">\n";
  for (const api::ThresholdOutcome& th : test.thresholds) {
    const bool ok = th.ok;
    out << "<tr class=\"" << (ok ? "ok" : "crossed") << "\"><td>" << (ok ? "ok" : "CROSSED")
        << "</td><td>" << esc(th.name) << "</td><td>" << esc(threshold_value(th)) << "</td></tr>\n";
  }
  out << "</table>\n";
}

// The test's events as marks, numbered as the list under the charts numbers them.
std::vector<ChartMark> marks_of(const api::LoadAnswer& test) {
  std::vector<ChartMark> out;
  for (size_t i = 0; i < test.events.size(); ++i) {
    const api::LoadEvent& e = test.events[i];
    out.push_back({e.t, std::to_string(i + 1), e.kind, e.text});
  }
  return out;
}

void charts(std::ostringstream& out, const api::LoadAnswer& test) {
  const std::vector<ChartMark> marks = marks_of(test);
  // A second of the series is a document of its own (master/loads.cc's second_json).
  json series = test.series;
  // An ended test's last second is cut short by its end (or by the stop): drawn, it would look
  // like a collapse of the load.
  if (test.state != "running" && series.is_array() && series.size() > 1) {
    series.erase(series.size() - 1);
  }
  const std::vector<double> xs = column(series, "t");
  if (xs.empty()) {
    out << "<p>No complete second was measured.</p>\n";
    return;
  }
  out << svg_chart("rps", "Requests per second", xs,
                   {{"requests/s", "#1f77b4", column(series, "rps")},
                    {"errors/s", "#d62728", column(series, "errors")}},
                   count_label, marks);
  out << svg_chart("latency", "Latency from the intended start", xs,
                   {{"p50", "#2ca02c", column(series, "p50")},
                    {"p90", "#ff7f0e", column(series, "p90")},
                    {"p99", "#d62728", column(series, "p99")}},
                   ms_label, marks);
  std::vector<ChartLine> load = {{"VUs", "#9467bd", column(series, "vus")}};
  if (test.model == "held" || test.connections.opened > 0) {
    load.push_back({"connections", "#8c564b", column(series, "connections")});
  }
  out << svg_chart("load", "Virtual users and connections", xs, load, count_label, marks);
  if (test.messages.sent + test.messages.received > 0) {
    out << svg_chart("messages", "WebSocket messages per second", xs,
                     {{"sent/s", "#1f77b4", column(series, "sent")},
                      {"received/s", "#2ca02c", column(series, "received")}},
                     count_label, marks);
  }
  const json target = test.target ? test.target->series : json();
  if (target.is_array() && !target.empty()) {
    out << svg_chart("target", "Watched target: RSS", column(target, "t"),
                     {{"rss", "#17becf", column(target, "rss")}}, bytes_label, marks);
  }
}

void events_table(std::ostringstream& out, const api::LoadAnswer& test) {
  if (test.events.empty()) return;
  out << "<table class=\"events\">\n";
  for (size_t i = 0; i < test.events.size(); ++i) {
    const api::LoadEvent& e = test.events[i];
    out << "<tr data-event=\"" << esc(e.kind) << "\"><td style=\"color:" << mark_colour(e.kind)
        << "\">" << i + 1 << "</td><td>" << esc(fixed(e.t, 1)) << " s</td><td>" << esc(e.kind)
        << "</td><td>" << esc(e.text) << "</td></tr>\n";
  }
  out << "</table>\n";
}

// Why iterations failed, each with a trace to look up in the server's tracer.
void failures_table(std::ostringstream& out, const api::LoadAnswer& test) {
  if (test.reasons.empty()) return;
  out << "<h2>Failures</h2>\n<table class=\"failures\">\n<tr><th>iterations</th><th>reason"
      << "</th><th>trace id, one of them</th></tr>\n";
  for (const auto& [why, n] : test.reasons) {
    auto trace = test.reason_traces.find(why);
    out << "<tr><td>" << n << "</td><td>" << esc(why) << "</td><td><code>"
        << esc(trace == test.reason_traces.end() ? "-" : trace->second) << "</code></td></tr>\n";
  }
  out << "</table>\n";
}

void slowest_table(std::ostringstream& out, const api::LoadAnswer& test) {
  if (test.slowest.empty()) return;
  out << "<h2>Slowest requests</h2>\n<table class=\"slowest\">\n<tr><th>latency</th><th>step"
      << "</th><th>status</th><th>at</th><th>trace id</th></tr>\n";
  for (const api::LoadSlowRequest& q : test.slowest) {
    out << "<tr><td>" << esc(latency_text(q.ms)) << "</td><td>" << q.step << " " << esc(q.step_name)
        << "</td><td>" << esc(q.status != 0 ? std::to_string(q.status) : q.outcome) << "</td><td>"
        << esc(fixed(q.t, 0)) << " s</td><td><code>" << esc(q.trace_id) << "</code></td></tr>\n";
  }
  out << "</table>\n";
}

// A card: a title, a large value, and a line under it.
void card(std::ostringstream& out, const std::string& cls, const std::string& title,
          const std::string& value, const std::string& note) {
  out << "<div class=\"card " << cls << "\"><div class=\"title\">" << esc(title)
      << "</div><div class=\"value\">" << esc(value) << "</div><div class=\"note\">" << esc(note)
      << "</div></div>\n";
}

// The load the test was under at `t` seconds: its VUs, connections or arrival rate.
std::string load_at(const api::LoadAnswer& test, double t) {
  const json* at = nullptr;
  if (test.series.is_array()) {
    for (const json& s : test.series) {
      if (json_number(s, "t") <= t) at = &s;
    }
  }
  if (at == nullptr) return "";
  if (test.model == "held") return fixed(json_number(*at, "connections"), 0) + " connections";
  if (test.model == "open") return fixed(json_number(*at, "rps"), 0) + " requests/s";
  return fixed(json_number(*at, "vus"), 0) + " VUs";
}

void cards(std::ostringstream& out, const api::LoadAnswer& test) {
  out << "<div class=\"cards\">\n";
  const bool good = test.state == "passed";
  card(out, good ? "good" : "bad", "verdict", test.state,
       test.reason.empty() ? (good ? "every threshold held" : "") : test.reason);
  card(out, "", "throughput", fixed(test.rps, test.rps < 100 ? 1 : 0) + "/s",
       std::to_string(test.requests) + " requests in " + fixed(test.elapsed_s, 1) + " s");
  card(out, "", "latency p99", latency_text(test.latency.p99),
       "p50 " + latency_text(test.latency.p50) +
           (test.corrected ? ", from the intended start" : ""));
  card(out, test.errors.count > 0 ? "bad" : "", "errors", percent(test.errors.rate),
       std::to_string(test.errors.count) + " of " + std::to_string(test.requests));
  for (const api::LoadEvent& e : test.events) {
    if (e.kind == "stage") continue;
    const std::string load = load_at(test, e.t);
    card(out, "bad", "broke at", load.empty() ? fixed(e.t, 1) + " s" : load,
         fixed(e.t, 1) + " s: " + e.text);
    break;
  }
  if (test.target && (test.target->process || test.target->rss_max > 0)) {
    const auto& p = test.target->process;
    const double peak = p ? static_cast<double>(p->rss_peak) : test.target->rss_max;
    std::string note = p ? "the target " + p->state : "the watched target";
    if (p && p->cause) note += ": " + *p->cause;
    card(out, p && p->state == "died" ? "bad" : "", "target peak RSS",
         human_bytes(static_cast<uint64_t>(peak)), note);
  }
  out << "</div>\n";
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:900px}"
    "table{border-collapse:collapse;margin:8px 0 16px}th,td{padding:3px 10px;text-align:left;"
    "vertical-align:top}th{color:#555;font-weight:normal}"
    "table.thresholds td{border-top:1px solid #ddd}tr.crossed td{color:#b00;font-weight:bold}"
    "tr.ok td:first-child{color:#080}svg{display:block;margin:12px 0}"
    "text{font-size:11px;fill:#444}.grid{stroke:#e5e5e5}.axis{stroke:#888}"
    ".cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0 20px}.card{border:1px solid #ddd;"
    "border-radius:6px;padding:10px 14px;min-width:150px;max-width:260px}.card .title{color:#666;"
    "font-size:12px}.card .value{font-size:24px;margin:2px 0}.card .note{color:#555;"
    "font-size:12px}.card.good .value{color:#080}.card.bad .value{color:#b00}"
    "table.events td{border-top:1px solid #eee;font-size:13px}";

}  // namespace

std::string svg_chart(const std::string& id, const std::string& title,
                      const std::vector<double>& xs, const std::vector<ChartLine>& lines,
                      std::string (*label)(double), const std::vector<ChartMark>& marks) {
  double x0 = xs.empty() ? 0 : xs.front(), x1 = xs.empty() ? 1 : xs.back();
  for (const ChartMark& m : marks) x1 = std::max(x1, m.x);  // an end in the last, cut second
  if (x1 <= x0) x1 = x0 + 1;
  double top = 0;
  for (const ChartLine& l : lines) {
    for (double y : l.ys) top = std::max(top, y);
  }
  top = round_up(top);
  const double w = kWidth - kLeft - kRight, h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * w; };
  auto py = [&](double y) { return kTop + h - std::clamp(y / top, 0.0, 1.0) * h; };
  std::ostringstream out;
  out << "<svg class=\"chart\" data-chart=\"" << esc(id)
      << "\" xmlns=\"http://www.w3.org/2000/svg\" "
      << "width=\"" << kWidth << "\" height=\"" << kHeight << "\" viewBox=\"0 0 " << kWidth << " "
      << kHeight << "\">\n<text x=\"" << kLeft << "\" y=\"16\" style=\"font-size:13px;fill:#222\">"
      << esc(title) << "</text>\n";
  double legend_x = kWidth - kRight;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    legend_x -= 12 + 7 * static_cast<double>(it->name.size());
    out << "<text x=\"" << num(legend_x) << "\" y=\"16\" style=\"fill:" << it->color << "\">"
        << esc(it->name) << "</text>\n";
  }
  for (int i = 0; i <= 4; ++i) {
    const double y = top * i / 4;
    out << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kLeft + w << "\" y1=\""
        << num(py(y)) << "\" y2=\"" << num(py(y)) << "\"/>\n<text x=\"" << kLeft - 6 << "\" y=\""
        << num(py(y) + 4) << "\" text-anchor=\"end\">" << esc(label(y)) << "</text>\n";
  }
  out << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kLeft << "\" y1=\"" << kTop
      << "\" y2=\"" << kTop + h << "\"/>\n";
  for (double x : {x0, (x0 + x1) / 2, x1}) {
    out << "<text x=\"" << num(px(x)) << "\" y=\"" << kHeight - 8 << "\" text-anchor=\"middle\">"
        << esc(count_label(x)) << " s</text>\n";
  }
  for (const ChartLine& l : lines) {
    out << "<polyline data-series=\"" << esc(l.name) << "\" fill=\"none\" stroke=\"" << l.color
        << "\" stroke-width=\"1.5\" points=\"";
    for (size_t i = 0; i < l.ys.size() && i < xs.size(); ++i) {
      out << (i ? " " : "") << num(px(xs[i])) << "," << num(py(l.ys[i]));
    }
    out << "\"/>\n";
  }
  for (const ChartMark& m : marks) {
    if (m.x < x0 || m.x > x1) continue;
    out << "<g class=\"mark\" data-mark=\"" << esc(m.kind) << "\"><title>" << esc(m.text)
        << "</title><line x1=\"" << num(px(m.x)) << "\" x2=\"" << num(px(m.x)) << "\" y1=\"" << kTop
        << "\" y2=\"" << kTop + h << "\" stroke=\"" << mark_colour(m.kind)
        << "\" stroke-dasharray=\"4 3\"/><text x=\"" << num(px(m.x) + 3) << "\" y=\"" << kTop + 10
        << "\" style=\"fill:" << mark_colour(m.kind) << "\">" << esc(m.label) << "</text></g>\n";
  }
  out << "</svg>\n";
  return out.str();
}

std::string render_load_html(const api::LoadAnswer& test) {
  std::ostringstream out;
  const std::string title = "corral load " + test.id + ": " + test.name;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
      << esc(title) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>"
      << esc(title) << "</h1>\n";
  cards(out, test);
  thresholds_table(out, test);
  out << "<h2>Over time</h2>\n";
  charts(out, test);
  events_table(out, test);
  failures_table(out, test);
  slowest_table(out, test);
  out << "<h2>Details</h2>\n";
  summary_table(out, test);
  out << "<p style=\"color:#888\">Written by corral from GET /loads/" << esc(test.id)
      << ".</p>\n</body>\n</html>\n";
  return out.str();
}

}  // namespace corral::cli
