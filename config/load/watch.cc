// The "watch" part of a load section: `{"pid": 4242, "url": "http://127.0.0.1:9100/metrics",
// "series": ["nodejs_heap_size_used_bytes"], "stop_when": ["target.rss > 1.2GB"]}`.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "config/config.h"
#include "config/load/parse.h"
#include "config/scenario/parse_internal.h"

namespace corral::load {
namespace {

using nlohmann::json;
using scenario::detail::check_fields;
using scenario::detail::element_path;
using scenario::detail::fail;
using scenario::detail::field_path;
using scenario::detail::ParseError;
using scenario::detail::read_string;
using scenario::detail::shown;
using scenario::detail::trim;

constexpr std::string_view kProcMetrics[] = {"rss", "cpu", "fds", "threads"};

bool proc_metric(std::string_view name) {
  for (std::string_view m : kProcMetrics) {
    if (m == name) return true;
  }
  return false;
}

// A Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
bool series_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != ':') return false;
  }
  return true;
}

// "1.2GB" (bytes, as the config's sizes), "1.5", "900".
bool read_bound(std::string_view text, double& out) {
  size_t unit = text.find_first_not_of("0123456789.");
  if (unit == std::string_view::npos) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty();
  }
  auto bytes = config::parse_bytes(std::string(text));
  if (!bytes) return false;
  out = static_cast<double>(*bytes);
  return true;
}

StopWhen read_stop_when(const std::string& text, const std::string& path) {
  std::string_view s = trim(text);
  size_t op = s.find_first_of("<>");
  std::string_view name = op == std::string_view::npos ? s : trim(s.substr(0, op));
  if (op == std::string_view::npos || name.substr(0, 7) != "target.") {
    fail(path, "expected a comparison like \"target.rss > 1.2GB\", got \"" + text + "\"");
  }
  StopWhen w;
  w.name = std::string(s);
  w.metric = std::string(name.substr(7));
  if (!series_name(w.metric)) fail(path, "\"" + w.metric + "\" is not a metric name");
  bool or_equal = op + 1 < s.size() && s[op + 1] == '=';
  w.op = s[op] == '<' ? (or_equal ? Op::kLessEqual : Op::kLess)
                      : (or_equal ? Op::kGreaterEqual : Op::kGreater);
  std::string_view bound = trim(s.substr(op + (or_equal ? 2 : 1)));
  if (!read_bound(bound, w.bound)) {
    fail(path, "expected a number or a size like 1.2GB, got \"" + std::string(bound) + "\"");
  }
  return w;
}

}  // namespace

bool StopWhen::holds(double value) const { return compare(value, op, bound); }

Result<Watch> parse_watch(const json& j, const std::string& path, bool started_target) {
  try {
    if (!j.is_object()) fail(path, "expected an object with \"pid\" and/or \"url\"");
    check_fields(j, path, {"pid", "url", "series", "stop_when"});
    Watch w;
    if (j.contains("pid")) {
      const json& pid = j["pid"];
      if (!pid.is_number_integer() || pid.get<int64_t>() < 1 || pid.get<int64_t>() > (1 << 22)) {
        fail(field_path(path, "pid"), "expected a process id, got " + shown(pid));
      }
      w.pid = pid.get<int64_t>();
    }
    if (j.contains("url")) {
      w.url = read_string(j["url"], field_path(path, "url"));
      if (w.url.rfind("http://", 0) != 0) {
        fail(field_path(path, "url"), "expected an http:// URL, got \"" + w.url + "\"");
      }
    }
    if (j.contains("pid") && started_target) {
      fail(field_path(path, "pid"), "not with \"target\": the target's own pid is watched");
    }
    if (!w.any() && !started_target) fail(path, "give \"pid\", \"url\" or both");
    if (j.contains("series")) {
      const json& list = j["series"];
      const std::string p = field_path(path, "series");
      if (w.url.empty()) fail(p, "series are scraped from \"url\", which is missing");
      if (!list.is_array()) fail(p, "expected an array of metric names");
      for (size_t i = 0; i < list.size(); ++i) {
        std::string name = read_string(list[i], element_path(p, i));
        if (!series_name(name)) fail(element_path(p, i), "\"" + name + "\" is not a metric name");
        w.series.push_back(name);
      }
    }
    if (j.contains("stop_when")) {
      const json& list = j["stop_when"];
      const std::string p = field_path(path, "stop_when");
      if (!list.is_array()) fail(p, "expected an array of conditions like \"target.rss > 1.2GB\"");
      for (size_t i = 0; i < list.size(); ++i) {
        StopWhen s = read_stop_when(read_string(list[i], element_path(p, i)), element_path(p, i));
        if (proc_metric(s.metric) && w.pid == 0 && !started_target) {
          fail(element_path(p, i), "target." + s.metric + " is read from \"pid\", which is missing");
        }
        if (!proc_metric(s.metric)) {
          if (w.url.empty()) {
            fail(element_path(p, i), "target." + s.metric +
                                         " is not one of rss, cpu, fds, threads, and there is "
                                         "no \"url\" to scrape it from");
          }
          if (std::find(w.series.begin(), w.series.end(), s.metric) == w.series.end()) {
            w.series.push_back(s.metric);
          }
        }
        w.stop_when.push_back(std::move(s));
      }
    }
    return w;
  } catch (const ParseError& e) {
    return invalid_argument(e.message);
  }
}

}  // namespace corral::load
