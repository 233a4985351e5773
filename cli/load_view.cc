#include "cli/load_view.h"

#include <cstdio>
#include <sstream>
#include <vector>

#include "cli/format.h"
#include "config/config.h"
#include "cli/junit.h"
#include "cli/runs_view.h"

namespace corral::cli {

using nlohmann::json;

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string percent(double fraction) { return fixed(fraction * 100, 2) + "%"; }

std::string latency_text(double ms) {
  if (!(ms > 0)) return "0ms";
  if (ms >= 1000) return fixed(ms / 1000, 2) + "s";
  return fixed(ms, ms < 1 ? 3 : ms < 10 ? 2 : ms < 100 ? 1 : 0) + "ms";
}

std::string threshold_value(const json& th) {
  const std::string name = json_string(th, "name");
  double v = json_number(th, "value");
  if (name.rfind("latency", 0) == 0) return latency_text(v);
  if (name.find("rate") != std::string::npos) return percent(v);
  return fixed(v, v == static_cast<double>(static_cast<long long>(v)) ? 0 : 1);
}

namespace {

// "p50 2.65ms  p90 2.93ms  ...  max 7.12ms" from a latency object (milliseconds).
std::string latency_line(const json& l) {
  std::string out;
  for (const char* key : {"p50", "p90", "p95", "p99", "p99.9", "max"}) {
    if (!out.empty()) out += "  ";
    out += std::string(key) + " " + latency_text(json_number(l, key));
  }
  return out;
}

std::string errors_text(const json& e) {
  std::string out = fixed(json_number(e, "count"), 0) + " (" + percent(json_number(e, "rate")) + ")";
  std::string classes;
  for (const char* key : {"status", "transport", "timeout", "expect"}) {
    double n = json_number(e, key);
    if (n == 0) continue;
    classes += (classes.empty() ? "" : ", ") + fixed(n, 0) + " " + key;
  }
  return classes.empty() ? out : out + ": " + classes;
}


// "closed, 20 VUs for 30s", "open, 2000/s for 1m (max 100 VUs)", "closed, 3 stages".
std::string model_text(const json& test) {
  const json load = json_field(test, "load");
  std::string out = json_string(test, "model");
  const json stages = json_field(load, "stages");
  if (stages.is_array()) return out + ", " + std::to_string(stages.size()) + " stages";
  if (load.contains("vus")) out += ", " + json_field(load, "vus").dump() + " VUs";
  if (load.contains("rate")) out += ", " + json_field(load, "rate").dump() + "/s";
  if (load.contains("connections")) {
    out += ", " + json_field(load, "connections").dump() + " held connections";
  }
  out += " for " + json_string(load, "duration");
  if (load.contains("pace")) out += ", an iteration every " + json_string(load, "pace");
  if (load.contains("max_vus")) out += " (max " + json_field(load, "max_vus").dump() + " VUs)";
  return out;
}

// "target     : pid 4242, rss up to 1.2gb, cpu up to 0.98 cores\n" and, when the target ended
// the test, what it did and the load at that moment.
std::string target_text(const json& target) {
  if (!target.is_object()) return "";
  std::ostringstream out;
  out << "target     : ";
  if (target.contains("pid") && !target["pid"].is_null()) {
    out << "pid " << target["pid"].dump() << ", rss up to "
        << human_bytes(static_cast<uint64_t>(json_number(target, "rss_max"))) << ", cpu up to "
        << fixed(json_number(target, "cpu_max"), 2) << " cores";
  }
  if (target.contains("url") && !target["url"].is_null()) {
    out << (target["pid"].is_null() ? "" : "; ") << "metrics from " << json_string(target, "url");
  }
  out << "\n";
  const json event = json_field(target, "event");
  if (!event.is_object()) return out.str();
  const json load = json_field(event, "load");
  out << "  " << (json_string(event, "event") == "died" ? "the process was gone"
                                                         : "crossed " + json_string(event, "condition"))
      << " at " << fixed(json_number(event, "t"), 1) << "s, under " << fixed(json_number(load, "vus"), 0)
      << " VUs";
  if (json_number(load, "connections") > 0) {
    out << " / " << fixed(json_number(load, "connections"), 0) << " connections";
  }
  out << ", " << fixed(json_number(load, "rps"), 0) << " requests/s, p99 "
      << latency_text(json_number(load, "p99")) << ", " << fixed(json_number(load, "errors"), 0)
      << " errors/s\n";
  return out.str();
}

// A test spread over hosts (docs/cluster.md): its hosts, and each other host's share; "" for
// a test on one host.
std::string hosts_line(const json& cluster) {
  if (!cluster.is_object()) return "";
  std::ostringstream out;
  out << "hosts      : " << fixed(json_number(cluster, "hosts"), 0);
  if (cluster.value("origin", json()).is_string()) {
    out << ", this host's share " << fixed(json_number(cluster, "share"), 0)
        << " of the test of host " << json_string(cluster, "origin") << "\n";
    return out.str();
  }
  out << " (this one the origin)";
  const json others = json_field(cluster, "others");
  for (const json& o : others.is_array() ? others : json::array()) {
    out << "; " << json_string(o, "host") << " " << json_string(o, "state");
  }
  out << "\n";
  return out.str();
}

}  // namespace

// "stage 2/3" while a staged test runs (from its stages' durations and the elapsed time), or "".
std::string stage_text(const json& test) {
  const json stages = json_field(json_field(test, "load"), "stages");
  if (!stages.is_array() || stages.size() < 2 || json_string(test, "state") != "running") return "";
  const double elapsed_ms = json_number(test, "elapsed_s") * 1000;
  double end_ms = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    auto d = config::parse_duration_ms(json_string(stages[i], "duration"));
    if (!d) return "";
    end_ms += static_cast<double>(*d);
    if (elapsed_ms < end_ms || i + 1 == stages.size()) {
      return "  stage " + std::to_string(i + 1) + "/" + std::to_string(stages.size());
    }
  }
  return "";
}

std::string render_load_progress(const json& test) {
  const json series = json_field(test, "series");
  json last = series.is_array() && !series.empty() ? series.back() : json::object();
  const bool ended = json_string(test, "state") != "running";
  if (ended) {  // the whole test rather than its last, partial second
    last = {{"vus", json_number(test, "vus_max")},
            {"rps", json_number(test, "rps")},
            {"errors", json_number(json_field(test, "errors"), "rate") * json_number(test, "rps")},
            {"p99", json_number(json_field(test, "latency"), "p99")},
            {"dropped", json_number(json_field(test, "iterations"), "dropped")},
            {"connections", json_number(json_field(test, "connections"), "max")}};
  }
  double requests = json_number(last, "rps");
  double errors = json_number(last, "errors");
  std::ostringstream out;
  out << json_string(test, "id") << "  " << json_string(test, "state") << "  "
      << elapsed_text(json_number(test, "elapsed_s")) << "/"
      << elapsed_text(json_number(test, "duration_s")) << stage_text(test) << "  vus "
      << fixed(json_number(last, "vus"), 0) << "  rps " << fixed(requests, 0) << "  p99 "
      << latency_text(json_number(last, "p99")) << "  errors "
      << percent(requests == 0 ? 0 : errors / requests);
  double dropped = json_number(last, "dropped");
  if (dropped > 0) out << "  dropped " << fixed(dropped, 0);
  if (json_string(test, "model") == "held") {
    out << "  conns " << fixed(json_number(last, "connections"), 0);
  }
  const json target = json_field(json_field(test, "target"), "last");
  if (target.contains("rss")) {
    out << "  target rss " << human_bytes(static_cast<uint64_t>(json_number(target, "rss")));
  }
  if (target.contains("up") && target["up"] == false) out << "  target gone";
  return out.str();
}

namespace {

// "protocol   : HTTP/2" (the requests' protocol, as the lean client answered them) and
// "tls        : 12 handshakes (10 full, 2 resumed), p50 1.2ms, p99 3.1ms"; nothing for a test
// over plain HTTP/1.1 by curl.
std::string protocol_lines(const json& test) {
  const json p = json_field(test, "protocols");
  const double h1 = json_number(p, "HTTP/1.1"), h2 = json_number(p, "HTTP/2");
  std::string out;
  if (h1 > 0 && h2 > 0) {
    out += "protocol   : HTTP/1.1 for " + fixed(h1, 0) + " requests, HTTP/2 for " + fixed(h2, 0) +
           "\n";
  } else if (h1 > 0 || h2 > 0) {
    out += std::string("protocol   : ") + (h2 > 0 ? "HTTP/2" : "HTTP/1.1") + "\n";
  }
  const json t = json_field(test, "tls");
  if (json_number(t, "handshakes") > 0) {
    const json h = json_field(t, "handshake");
    out += "tls        : " + fixed(json_number(t, "handshakes"), 0) + " handshakes (" +
           fixed(json_number(t, "full"), 0) + " full, " + fixed(json_number(t, "resumed"), 0) +
           " resumed), p50 " + latency_text(json_number(h, "p50")) + ", p99 " +
           latency_text(json_number(h, "p99")) + "\n";
  }
  return out;
}

// corral's own lateness in starting iterations on schedule, and a warning when it was large
// enough to be in the numbers: more than 1 % of the starts over 5 ms late.
std::string lateness_lines(const json& late) {
  std::string out =
      "  late     : " + latency_line(late) + "  (corral's own, starting iterations)\n";
  const double n = json_number(late, "count"), over = json_number(late, "over_5ms");
  if (n > 0 && over / n > 0.01) {
    out += "warning    : corral started " + percent(over / n) +
           " of iterations more than 5ms late: its own loop was saturated (CPU); that lateness "
           "is in the latency above as if the server had caused it\n";
  }
  return out;
}

}  // namespace

std::string render_load_summary(const json& test) {
  std::ostringstream out;
  const json it = json_field(test, "iterations");
  out << "load       : " << json_string(test, "id") << "\n"
      << "scenario   : " << json_string(test, "name") << "\n"
      << "model      : " << model_text(test) << "\n"
      << "state      : " << json_string(test, "state");
  if (!json_string(test, "reason").empty()) out << " (" << json_string(test, "reason") << ")";
  out << "\n"
      << "duration   : " << fixed(json_number(test, "elapsed_s"), 1) << "s on "
      << counted(static_cast<long>(json_number(test, "workers")), "worker", "workers") << ", up to "
      << fixed(json_number(test, "vus_max"), 0) << " VUs\n"
      << hosts_line(json_field(test, "cluster"))
      << "requests   : " << fixed(json_number(test, "requests"), 0) << " ("
      << fixed(json_number(test, "rps"), 1) << "/s), "
      << human_bytes(static_cast<uint64_t>(json_number(test, "bytes"))) << " received\n"
      << "iterations : " << fixed(json_number(it, "passed"), 0) << " passed, "
      << fixed(json_number(it, "failed"), 0) << " failed, " << fixed(json_number(it, "dropped"), 0)
      << " dropped, " << fixed(json_number(it, "interrupted"), 0) << " interrupted\n"
      << "errors     : " << errors_text(json_field(test, "errors")) << "\n";
  if (json_string(test, "model") == "held") {
    const json c = json_field(test, "connections");
    out << "connections: up to " << fixed(json_number(c, "max"), 0) << " open; "
        << fixed(json_number(c, "opened"), 0) << " opened, " << fixed(json_number(c, "failed"), 0)
        << " failed to connect, " << fixed(json_number(c, "closed"), 0)
        << " lost after connecting\n";
  }
  out << protocol_lines(test);
  const bool corrected = json_field(test, "corrected") == true;
  out << "latency    : " << latency_line(json_field(test, "latency"))
      << (corrected ? "  (from the intended start)\n" : "\n");
  if (corrected) {
    out << "  raw      : " << latency_line(json_field(test, "latency_raw")) << "\n"
        << lateness_lines(json_field(test, "start_lateness"));
  }
  const json steps = json_field(test, "steps");
  if (steps.is_array() && steps.size() > 1) {
    for (const json& s : steps) {
      out << "  step " << fixed(json_number(s, "index"), 0) << " " << json_string(s, "name")
          << ": " << fixed(json_number(s, "requests"), 0) << " requests, errors "
          << errors_text(json_field(s, "errors")) << ", p99 "
          << latency_text(json_number(json_field(s, "latency"), "p99")) << "\n";
    }
  }
  const json reasons = json_field(test, "reasons");
  if (reasons.is_object() && !reasons.empty()) {
    out << "failures   :\n";
    for (const auto& [why, n] : reasons.items()) out << "  " << n.dump() << "  " << why << "\n";
  }
  out << target_text(json_field(test, "target"));
  const json thresholds = json_field(test, "thresholds");
  if (thresholds.is_array() && !thresholds.empty()) {
    out << "thresholds :\n";
    for (const json& th : thresholds) {
      out << "  " << (json_field(th, "ok") == true ? "ok     " : "CROSSED") << " "
          << json_string(th, "name") << "  (" << threshold_value(th) << ")\n";
    }
  }
  return out.str();
}

std::string render_load_junit(const json& test) {
  const std::string scenario = json_string(test, "name");
  const double seconds = json_number(test, "elapsed_s");
  std::vector<JunitCase> cases;
  const json thresholds = json_field(test, "thresholds");
  if (thresholds.is_array()) {
    for (const json& th : thresholds) {
      JunitCase tc;
      tc.classname = scenario + ".thresholds";
      tc.name = json_string(th, "name");
      tc.seconds = seconds;
      if (json_field(th, "ok") != true) {
        tc.outcome = JunitCase::Outcome::kFailed;
        tc.message = "crossed: the value was " + threshold_value(th);
        tc.detail = tc.name + ": the value over the test was " + threshold_value(th);
      }
      cases.push_back(std::move(tc));
    }
  }
  JunitCase whole;
  whole.classname = scenario + ".load";
  whole.name = "load test";
  whole.seconds = seconds;
  const std::string state = json_string(test, "state");
  if (state != "passed" && state != "failed") {  // stopped, aborted, or still running
    whole.outcome = JunitCase::Outcome::kFailed;
    whole.message = json_string(test, "reason");
    if (whole.message.empty()) whole.message = state;
    whole.detail = "the load test ended " + state + ": " + whole.message;
  }
  cases.push_back(std::move(whole));
  return render_junit_suite(scenario + " (" + json_string(test, "id") + ")",
                            json_string(test, "created"), seconds, cases);
}

std::string render_loads_table(const json& loads, TableStyle style) {
  std::vector<std::vector<std::string>> rows;
  if (loads.is_array()) {
    for (const json& t : loads) {
      rows.push_back({json_string(t, "id"), json_string(t, "name"), json_string(t, "model"),
                      json_string(t, "state"), fixed(json_number(t, "workers"), 0),
                      elapsed_text(json_number(t, "elapsed_s")),
                      fixed(json_number(t, "requests"), 0), fixed(json_number(t, "rps"), 0),
                      latency_text(json_number(json_field(t, "latency"), "p99")),
                      percent(json_number(json_field(t, "errors"), "rate")),
                      json_string(t, "created", "-")});
    }
  }
  return render_table({"load", "scenario", "model", "state", "workers", "elapsed", "requests",
                       "rps", "p99", "errors", "created"},
                      rows, style);
}

}  // namespace corral::cli
