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

std::string threshold_value(const api::ThresholdOutcome& th) {
  const std::string& name = th.name;
  const double v = th.value;
  if (name.rfind("latency", 0) == 0 || name.rfind("ws_latency", 0) == 0) return latency_text(v);
  if (name.find("rate") != std::string::npos) return percent(v);
  return fixed(v, v == static_cast<double>(static_cast<long long>(v)) ? 0 : 1);
}

namespace {

// "p50 2.65ms  p90 2.93ms  ...  max 7.12ms" from a latency object (milliseconds).
std::string latency_line(const api::Latency& l) {
  const std::pair<const char*, double> values[] = {{"p50", l.p50},    {"p90", l.p90},
                                                   {"p95", l.p95},    {"p99", l.p99},
                                                   {"p99.9", l.p999}, {"max", l.max}};
  std::string out;
  for (const auto& [key, v] : values) {
    if (!out.empty()) out += "  ";
    out += std::string(key) + " " + latency_text(v);
  }
  return out;
}

std::string errors_text(const api::LoadErrors& e) {
  std::string out = std::to_string(e.count) + " (" + percent(e.rate) + ")";
  const std::pair<const char*, uint64_t> classes_of[] = {{"status", e.status},
                                                         {"transport", e.transport},
                                                         {"timeout", e.timeout},
                                                         {"expect", e.expect}};
  std::string classes;
  for (const auto& [key, n] : classes_of) {
    if (n == 0) continue;
    classes += (classes.empty() ? "" : ", ") + std::to_string(n) + " " + key;
  }
  return classes.empty() ? out : out + ": " + classes;
}

// "closed, 20 VUs for 30s", "open, 2000/s for 1m (max 100 VUs)", "closed, 3 stages".
std::string model_text(const api::LoadAnswer& test) {
  const json& load = test.load;
  std::string out = test.model;
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

// A target corral started: its command, and how it ended; when it died, why (a line saying it
// ran out of memory) and its last lines.
std::string process_text(const api::LoadTargetProcess& p) {
  std::ostringstream out;
  std::string cmd;
  for (const std::string& a : p.cmd) cmd += (cmd.empty() ? "" : " ") + a;
  out << "  started  : " << cmd << "\n";
  std::string how = p.signal      ? "killed by " + *p.signal
                    : p.exit_code ? "exit code " + std::to_string(*p.exit_code)
                                  : "";
  if (p.state == "stopped") {
    out << "  stopped by corral after the test (" << how << "), peak rss "
        << human_bytes(p.rss_peak) << "\n";
    // It ran out of memory all the same, perhaps as it was being stopped.
    if (p.cause) out << "  but it had run out of memory: " << *p.cause << "\n";
    return out.str();
  }
  if (p.state != "died") return out.str();
  out << "  died     : " << how << " at " << fixed(p.ended_s.value_or(0), 1) << "s, peak rss "
      << human_bytes(p.rss_peak) << "\n";
  if (p.cause) out << "  cause    : " << *p.cause << "\n";
  constexpr size_t kShown = 10;
  if (!p.lines.empty()) out << "  last lines:\n";
  for (size_t i = p.lines.size() > kShown ? p.lines.size() - kShown : 0; i < p.lines.size(); ++i)
    out << "    " << p.lines[i].stream << "| " << p.lines[i].text << "\n";
  return out.str();
}

// "target     : pid 4242, rss up to 1.2gb, cpu up to 0.98 cores\n" and, when the target ended
// the test, what it did and the load at that moment.
std::string target_text(const std::optional<api::LoadTarget>& watched) {
  if (!watched) return "";
  const api::LoadTarget& target = *watched;
  std::ostringstream out;
  out << "target     : ";
  if (target.pid) {
    out << "pid " << *target.pid << ", rss up to "
        << human_bytes(static_cast<uint64_t>(target.rss_max)) << ", cpu up to "
        << fixed(target.cpu_max, 2) << " cores";
  }
  if (target.url) out << (target.pid ? "; " : "") << "metrics from " << *target.url;
  out << "\n";
  const json& event = target.event;
  if (event.is_object()) {
    const json load = json_field(event, "load");
    const std::string what = json_string(event, "event") == "died"
                                 ? "the process " + json_string(event, "how", "was gone")
                                 : "crossed " + json_string(event, "condition");
    out << "  " << what << " at " << fixed(json_number(event, "t"), 1) << "s, under "
        << fixed(json_number(load, "vus"), 0) << " VUs";
    if (json_number(load, "connections") > 0) {
      out << " / " << fixed(json_number(load, "connections"), 0) << " connections";
    }
    if (json_number(load, "sent") > 0) {
      out << ", " << fixed(json_number(load, "sent"), 0) << " messages/s out";
    }
    out << ", " << fixed(json_number(load, "rps"), 0) << " requests/s, p99 "
        << latency_text(json_number(load, "p99")) << ", " << fixed(json_number(load, "errors"), 0)
        << " errors/s\n";
  }
  if (target.process) out << process_text(*target.process);
  return out.str();
}

// A test spread over hosts (docs/cluster.md): its hosts, and each other host's share; "" for
// a test on one host.
std::string hosts_line(const std::optional<api::LoadCluster>& spread) {
  if (!spread) return "";
  const api::LoadCluster& cluster = *spread;
  std::ostringstream out;
  out << "hosts      : " << cluster.hosts;
  if (cluster.origin) {
    out << ", this host's share " << cluster.share << " of the test of host " << *cluster.origin
        << "\n";
    return out.str();
  }
  out << " (this one the origin)";
  for (const api::LoadClusterHost& o : cluster.others) out << "; " << o.host << " " << o.state;
  out << "\n";
  return out.str();
}

}  // namespace

// "stage 2/3" while a staged test runs (from its stages' durations and the elapsed time), or "".
std::string stage_text(const api::LoadAnswer& test) {
  const json stages = json_field(test.load, "stages");
  if (!stages.is_array() || stages.size() < 2 || test.state != "running") return "";
  const double elapsed_ms = test.elapsed_s * 1000;
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

std::string render_load_progress(const api::LoadAnswer& test) {
  // A second of the series is a document of its own (master/loads.cc's second_json).
  const json& series = test.series;
  json last = series.is_array() && !series.empty() ? series.back() : json::object();
  const bool ended = test.state != "running";
  if (ended) {  // the whole test rather than its last, partial second
    last = {{"vus", test.vus_max},
            {"rps", test.rps},
            {"errors", test.errors.rate * test.rps},
            {"p99", test.latency.p99},
            {"dropped", test.iterations.dropped},
            {"connections", test.connections.max}};
  }
  double requests = json_number(last, "rps");
  double errors = json_number(last, "errors");
  std::ostringstream out;
  out << test.id << "  " << test.state << "  " << elapsed_text(test.elapsed_s) << "/"
      << elapsed_text(test.duration_s) << stage_text(test) << "  vus "
      << fixed(json_number(last, "vus"), 0) << "  rps " << fixed(requests, 0) << "  p99 "
      << latency_text(json_number(last, "p99")) << "  errors "
      << percent(requests == 0 ? 0 : errors / requests);
  double dropped = json_number(last, "dropped");
  if (dropped > 0) out << "  dropped " << fixed(dropped, 0);
  if (test.model == "held" || test.connections.opened > 0) {
    out << "  conns " << fixed(json_number(last, "connections"), 0);
  }
  if (test.messages.sent + test.messages.received > 0 && !ended) {
    out << "  msgs out " << fixed(json_number(last, "sent"), 0) << "/s in "
        << fixed(json_number(last, "received"), 0) << "/s";
  }
  const json target = test.target ? test.target->last : json();
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
std::string protocol_lines(const api::LoadAnswer& test) {
  const auto h1 = static_cast<double>(test.protocols.http1);
  const auto h2 = static_cast<double>(test.protocols.http2);
  std::string out;
  if (h1 > 0 && h2 > 0) {
    out += "protocol   : HTTP/1.1 for " + fixed(h1, 0) + " requests, HTTP/2 for " + fixed(h2, 0) +
           "\n";
  } else if (h1 > 0 || h2 > 0) {
    out += std::string("protocol   : ") + (h2 > 0 ? "HTTP/2" : "HTTP/1.1") + "\n";
  }
  const api::LoadTls& t = test.tls;
  if (t.handshakes > 0) {
    out += "tls        : " + std::to_string(t.handshakes) + " handshakes (" +
           std::to_string(t.full) + " full, " + std::to_string(t.resumed) + " resumed), p50 " +
           latency_text(t.handshake.p50) + ", p99 " + latency_text(t.handshake.p99) + "\n";
  }
  return out;
}

// corral's own lateness in starting iterations on schedule, and a warning when it was large
// enough to be in the numbers: more than 1 % of the starts over 5 ms late.
std::string lateness_lines(const api::StartLateness& late) {
  std::string out =
      "  late     : " + latency_line(late.late) + "  (corral's own, starting iterations)\n";
  const auto n = static_cast<double>(late.late.count);
  const auto over = static_cast<double>(late.over_5ms);
  if (n > 0 && over / n > 0.01) {
    out += "warning    : corral started " + percent(over / n) +
           " of iterations more than 5ms late: its own loop was saturated (CPU); that lateness "
           "is in the latency above as if the server had caused it\n";
  }
  return out;
}

// "connections: up to 100 open; 100 opened, 0 failed to connect, 2 lost after connecting
// (1001 x2)" for held connections and WebSockets, and "messages   : 600 sent (20.0/s), 600
// received (20.0/s)" for WebSocket messages.
std::string connection_lines(const api::LoadAnswer& test) {
  const api::LoadConnections& c = test.connections;
  std::ostringstream out;
  if (test.model == "held" || c.opened + c.failed > 0) {
    out << "connections: up to " << c.max << " open; " << c.opened << " opened, " << c.failed
        << " failed to connect, " << c.closed << " lost after connecting";
    std::string codes;
    for (const auto& [code, n] : c.close_codes) {
      codes += (codes.empty() ? "" : ", ") + code + " x" + std::to_string(n);
    }
    out << (codes.empty() ? "" : " (" + codes + ")") << "\n";
  }
  const api::LoadMessages& m = test.messages;
  if (m.sent + m.received > 0) {
    out << "messages   : " << m.sent << " sent (" << fixed(m.sent_per_s, 1) << "/s), " << m.received
        << " received (" << fixed(m.received_per_s, 1) << "/s)\n";
  }
  return out.str();
}

}  // namespace

std::string render_load_summary(const api::LoadAnswer& test) {
  std::ostringstream out;
  const api::LoadIterations& it = test.iterations;
  out << "load       : " << test.id << "\n"
      << "scenario   : " << test.name << "\n"
      << "model      : " << model_text(test) << "\n"
      << "state      : " << test.state;
  if (!test.reason.empty()) out << " (" << test.reason << ")";
  out << "\n"
      << "duration   : " << fixed(test.elapsed_s, 1) << "s on "
      << counted(static_cast<long>(test.workers), "worker", "workers") << ", up to " << test.vus_max
      << " VUs\n"
      << hosts_line(test.cluster) << "requests   : " << test.requests << " (" << fixed(test.rps, 1)
      << "/s), " << human_bytes(test.bytes) << " received\n"
      << "iterations : " << it.passed << " passed, " << it.failed << " failed, " << it.dropped
      << " dropped, " << it.interrupted << " interrupted\n"
      << "errors     : " << errors_text(test.errors) << "\n";
  out << connection_lines(test);
  out << protocol_lines(test);
  out << "latency    : " << latency_line(test.latency)
      << (test.corrected ? "  (from the intended start)\n" : "\n");
  if (test.corrected) {
    out << "  raw      : " << latency_line(test.latency_raw) << "\n"
        << lateness_lines(test.start_lateness);
  }
  if (test.steps.size() > 1) {
    for (const api::LoadStepTotals& s : test.steps) {
      out << "  step " << s.index << " " << s.name << ": " << s.requests << " requests, errors "
          << errors_text(s.errors) << ", p99 " << latency_text(s.latency.p99) << "\n";
    }
  }
  if (!test.reasons.empty()) {
    out << "failures   :\n";
    for (const auto& [why, n] : test.reasons) {
      out << "  " << n << "  " << why;
      if (auto trace = test.reason_traces.find(why); trace != test.reason_traces.end()) {
        out << "  (trace " << trace->second << ")";
      }
      out << "\n";
    }
  }
  out << target_text(test.target);
  if (!test.thresholds.empty()) {
    out << "thresholds :\n";
    for (const api::ThresholdOutcome& th : test.thresholds) {
      out << "  " << (th.ok ? "ok     " : "CROSSED") << " " << th.name << "  ("
          << threshold_value(th) << ")\n";
    }
  }
  // The slowest requests, with the trace to look them up by in the server's tracer.
  for (size_t i = 0; i < test.slowest.size() && i < kSlowestShown; ++i) {
    if (i == 0) out << "slowest    :\n";
    out << "  " << slow_request_text(test.slowest[i]) << "\n";
  }
  // What happened when (stage changes are in the load section already).
  bool heading = false;
  for (const api::LoadEvent& e : test.events) {
    if (e.kind == "stage") continue;
    if (!heading) out << "events     :\n";
    heading = true;
    out << "  " << fixed(e.t, 1) << "s  " << e.kind << ": " << e.text << "\n";
  }
  return out.str();
}

std::string slow_request_text(const api::LoadSlowRequest& q) {
  std::string out = latency_text(q.ms) + "  step " + std::to_string(q.step);
  if (!q.step_name.empty()) out += " " + q.step_name;
  out += "  " + (q.status != 0 ? std::to_string(q.status) : q.outcome);
  out += "  at " + fixed(q.t, 0) + "s";
  if (!q.trace_id.empty()) out += "  trace " + q.trace_id;
  return out;
}

std::string render_load_junit(const api::LoadAnswer& test, const std::vector<JunitCase>& extra) {
  std::vector<JunitCase> cases;
  for (const api::ThresholdOutcome& th : test.thresholds) {
    JunitCase tc;
    tc.classname = test.name + ".thresholds";
    tc.name = th.name;
    tc.seconds = test.elapsed_s;
    if (!th.ok) {
      tc.outcome = JunitCase::Outcome::kFailed;
      tc.message = "crossed: the value was " + threshold_value(th);
      tc.detail = tc.name + ": the value over the test was " + threshold_value(th);
    }
    cases.push_back(std::move(tc));
  }
  JunitCase whole;
  whole.classname = test.name + ".load";
  whole.name = "load test";
  whole.seconds = test.elapsed_s;
  if (test.state != "passed" && test.state != "failed") {  // stopped, aborted, or still running
    whole.outcome = JunitCase::Outcome::kFailed;
    whole.message = test.reason.empty() ? test.state : test.reason;
    whole.detail = "the load test ended " + test.state + ": " + whole.message;
  }
  cases.push_back(std::move(whole));
  cases.insert(cases.end(), extra.begin(), extra.end());
  return render_junit_suite(test.name + " (" + test.id + ")", test.created, test.elapsed_s, cases);
}

std::string render_loads_table(const std::vector<api::LoadAnswer>& loads, TableStyle style) {
  std::vector<std::vector<std::string>> rows;
  for (const api::LoadAnswer& t : loads) {
    rows.push_back({t.id, t.name, t.model, t.state, std::to_string(t.workers),
                    elapsed_text(t.elapsed_s), std::to_string(t.requests), fixed(t.rps, 0),
                    latency_text(t.latency.p99), percent(t.errors.rate),
                    t.created.empty() ? "-" : t.created});
  }
  return render_table({"load", "scenario", "model", "state", "workers", "elapsed", "requests",
                       "rps", "p99", "errors", "created"},
                      rows, style);
}

}  // namespace corral::cli
