// The watched target's part of Loads (loads.h): its samples, stop_when, and its death.
#include "config/config.h"
#include "master/loads.h"

namespace corral::master {
namespace {

using nlohmann::json;

// "1.25GB" for a byte count, "0.93" otherwise.
std::string value_text(const std::string& metric, double v) {
  if (metric == "rss" || metric.find("bytes") != std::string::npos) {
    return config::format_bytes(static_cast<uint64_t>(v < 0 ? 0 : v));
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The load at the last complete second: what the target was under when it happened.
json load_at(const LoadTest& t) {
  if (t.series.empty()) return json::object();
  const json& s = t.series.back();
  json out = json::object();
  for (const char* k : {"t", "vus", "connections", "rps", "errors", "p99", "sent", "received"}) {
    if (s.contains(k)) out[k] = s[k];
  }
  if (out.value("sent", 0) == 0 && out.value("received", 0) == 0) {
    out.erase("sent");  // not a WebSocket test
    out.erase("received");
  }
  return out;
}

}  // namespace

std::optional<std::string> Loads::on_target(LoadTest& t, json sample, int64_t now_ms) {
  const double at = elapsed_s(t, now_ms);
  sample["t"] = at;
  t.target.push_back(sample);
  if (t.ended() || t.ending || !t.target_event.is_null()) return std::nullopt;
  // A target corral started tells its own end, with its exit (on_target_died).
  if (sample.contains("up") && sample["up"] == false && !t.process) {
    t.target_event = {{"event", "died"}, {"t", at}, {"load", load_at(t)}};
    std::string why = "the target (pid " + std::to_string(t.spec.watch.pid) + ") is gone at " +
                      value_text("", at) + " s";
    t.events.push_back({at, "target", why});
    return why;
  }
  for (const load::StopWhen& w : t.spec.watch.stop_when) {
    auto it = sample.find(w.metric);
    if (it == sample.end() || !it->is_number()) continue;
    const double v = it->get<double>();
    if (!w.holds(v)) continue;
    t.target_event = {{"event", "crossed"}, {"t", at}, {"condition", w.name}, {"value", v},
                      {"load", load_at(t)}};
    std::string why =
        "stop_when " + w.name + ": " + value_text(w.metric, v) + " at " + value_text("", at) + " s";
    t.events.push_back({at, "target", why});
    return why;
  }
  return std::nullopt;
}

std::optional<std::string> Loads::on_target_died(LoadTest& t, int64_t now_ms) {
  if (t.ended() || t.ending || !t.process) return std::nullopt;
  const api::LoadTargetProcess& p = *t.process;
  const double at = elapsed_s(t, now_ms);
  std::string how = p.signal ? "was killed by " + *p.signal
                             : "exited with code " + std::to_string(p.exit_code.value_or(0));
  t.target_event = {{"event", "died"}, {"t", at}, {"load", load_at(t)}, {"how", how}};
  if (p.cause) t.target_event["cause"] = *p.cause;
  std::string why = "the target (pid " + std::to_string(t.spec.watch.pid) + ") " + how + " at " +
                    value_text("", at) + " s" + (p.cause ? ": " + *p.cause : std::string());
  t.events.push_back({at, "target", why});
  return why;
}

}  // namespace corral::master
