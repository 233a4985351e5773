#include "shared/api/loads.h"

#include "shared/api/present.h"
#include "shared/api/read_array.h"
#include "shared/ipc/fields.h"

namespace corral::api {

using detail::or_null;
using detail::present;
using detail::read_array;
using detail::read_entries;
using ipc::detail::FieldReader;
using nlohmann::json;

namespace {

// Each reads the object field `name` of `parent`'s object `j`, when present, into `out`.
void read(FieldReader& parent, const json& j, const char* name, Latency& out) {
  if (!parent.ok() || !present(j, name)) return;
  FieldReader r(j[name], parent.path(name));
  r.u64("count", out.count);
  r.number("min", out.min);
  r.number("mean", out.mean);
  r.number("p50", out.p50);
  r.number("p90", out.p90);
  r.number("p95", out.p95);
  r.number("p99", out.p99);
  r.number("p99.9", out.p999);
  r.number("max", out.max);
  parent.take(r);
}

void read(FieldReader& parent, const json& j, const char* name, LoadErrors& out) {
  if (!parent.ok() || !present(j, name)) return;
  FieldReader r(j[name], parent.path(name));
  r.u64("count", out.count);
  r.number("rate", out.rate);
  r.u64("status", out.status);
  r.u64("transport", out.transport);
  r.u64("timeout", out.timeout);
  r.u64("expect", out.expect);
  parent.take(r);
}

void read_parts(FieldReader& r, const json& j, LoadAnswer& a) {
  if (present(j, "iterations")) {
    FieldReader it(j["iterations"], r.path("iterations"));
    it.u64("passed", a.iterations.passed);
    it.u64("failed", a.iterations.failed);
    it.u64("dropped", a.iterations.dropped);
    it.u64("interrupted", a.iterations.interrupted);
    r.take(it);
  }
  if (present(j, "connections")) {
    FieldReader c(j["connections"], r.path("connections"));
    c.u64("open", a.connections.open);
    c.u64("max", a.connections.max);
    c.u64("opened", a.connections.opened);
    c.u64("failed", a.connections.failed);
    c.u64("closed", a.connections.closed);
    read_entries(c, j["connections"], "close_codes", [&](FieldReader& cc, const std::string& code) {
      cc.u64(code, a.connections.close_codes[code]);
    });
    r.take(c);
  }
  if (present(j, "messages")) {
    FieldReader m(j["messages"], r.path("messages"));
    m.u64("sent", a.messages.sent);
    m.u64("received", a.messages.received);
    m.number("sent_per_s", a.messages.sent_per_s);
    m.number("received_per_s", a.messages.received_per_s);
    r.take(m);
  }
  if (present(j, "tls")) {
    FieldReader t(j["tls"], r.path("tls"));
    t.u64("handshakes", a.tls.handshakes);
    t.u64("full", a.tls.full);
    t.u64("resumed", a.tls.resumed);
    read(t, j["tls"], "handshake", a.tls.handshake);
    r.take(t);
  }
  if (present(j, "protocols")) {
    FieldReader p(j["protocols"], r.path("protocols"));
    p.u64("HTTP/1.1", a.protocols.http1);
    p.u64("HTTP/2", a.protocols.http2);
    r.take(p);
  }
  read(r, j, "errors", a.errors);
  read(r, j, "latency", a.latency);
  read(r, j, "latency_raw", a.latency_raw);
  read(r, j, "start_lateness", a.start_lateness.late);
  if (r.ok() && present(j, "start_lateness")) {
    FieldReader s(j["start_lateness"], r.path("start_lateness"));
    s.u64("over_5ms", a.start_lateness.over_5ms);
    r.take(s);
  }
}

// Calls each(reader, element) for the elements of the array field `name`, when present.
void read_lists(FieldReader& r, const json& j, LoadAnswer& a) {
  read_array(r, j, "steps", [&](FieldReader& e, const json& s) {
    LoadStepTotals& t = a.steps.emplace_back();
    e.u32("index", t.index);
    e.text("name", t.name);
    e.u64("requests", t.requests);
    read(e, s, "errors", t.errors);
    read(e, s, "latency", t.latency);
    read(e, s, "latency_raw", t.latency_raw);
  });
  read_array(r, j, "thresholds", [&](FieldReader& e, const json&) {
    ThresholdOutcome& t = a.thresholds.emplace_back();
    e.text("name", t.name);
    e.number("value", t.value);
    e.boolean("ok", t.ok);
  });
  read_array(r, j, "slowest", [&](FieldReader& e, const json&) {
    LoadSlowRequest& q = a.slowest.emplace_back();
    e.number("t", q.t);
    e.u32("step", q.step);
    e.text("step_name", q.step_name);
    e.number("ms", q.ms);
    e.i64("status", q.status);
    e.text("outcome", q.outcome);
    e.text("trace_id", q.trace_id);
  });
  read_array(r, j, "events", [&](FieldReader& e, const json&) {
    LoadEvent& ev = a.events.emplace_back();
    e.number("t", ev.t);
    e.text("kind", ev.kind);
    e.text("text", ev.text);
  });
  read_entries(r, j, "reasons",
               [&](FieldReader& e, const std::string& why) { e.u64(why, a.reasons[why]); });
  read_entries(r, j, "reason_traces",
               [&](FieldReader& e, const std::string& why) { e.text(why, a.reason_traces[why]); });
}

void read_process(FieldReader& r, const json& j, LoadTarget& target) {
  if (!r.ok() || !present(j, "process")) return;
  const json& p = j["process"];
  FieldReader f(p, r.path("process"));
  LoadTargetProcess& out = target.process.emplace();
  if (!p.contains("cmd") || !p["cmd"].is_array()) {
    f.fail("cmd", "expected an array of strings");
  } else {
    for (const json& arg : p["cmd"]) {
      if (!arg.is_string()) return r.fail("process", "cmd: expected an array of strings");
      out.cmd.push_back(arg.get<std::string>());
    }
  }
  f.text("state", out.state, true);
  if (present(p, "exit_code")) f.i64("exit_code", out.exit_code.emplace());
  if (present(p, "signal")) f.text("signal", out.signal.emplace());
  if (present(p, "ended_s")) f.number("ended_s", out.ended_s.emplace());
  f.u64("rss_peak", out.rss_peak);
  if (present(p, "cause")) f.text("cause", out.cause.emplace());
  read_array(f, p, "lines", [&](FieldReader& e, const json&) {
    TargetLine& line = out.lines.emplace_back();
    e.text("stream", line.stream, true);
    e.text("text", line.text);
  });
  r.take(f);
}

void read_target(FieldReader& r, const json& j, LoadAnswer& a) {
  if (!r.ok() || !present(j, "target")) return;
  FieldReader t(j["target"], r.path("target"));
  LoadTarget& out = a.target.emplace();
  if (present(j["target"], "pid")) t.i64("pid", out.pid.emplace());
  if (present(j["target"], "url")) t.text("url", out.url.emplace());
  t.any("last", out.last);
  t.number("rss_max", out.rss_max);
  t.number("cpu_max", out.cpu_max);
  t.any("event", out.event);
  t.any("series", out.series);
  read_process(t, j["target"], out);
  r.take(t);
}

void read_cluster(FieldReader& r, const json& j, LoadAnswer& a) {
  if (!r.ok() || !present(j, "cluster")) return;
  FieldReader c(j["cluster"], r.path("cluster"));
  LoadCluster& out = a.cluster.emplace();
  c.i64("hosts", out.hosts);
  c.i64("share", out.share);
  if (present(j["cluster"], "origin")) c.text("origin", out.origin.emplace());
  read_array(c, j["cluster"], "others", [&](FieldReader& e, const json&) {
    LoadClusterHost& h = out.others.emplace_back();
    e.text("host", h.host);
    e.i64("share", h.share);
    e.text("state", h.state);
    e.boolean("taking_part", h.taking_part);
  });
  r.take(c);
}

json to_json(const LoadTargetProcess& p) {
  json lines = json::array();
  for (const TargetLine& l : p.lines) lines.push_back({{"stream", l.stream}, {"text", l.text}});
  return {{"cmd", p.cmd},
          {"state", p.state},
          {"exit_code", or_null(p.exit_code)},
          {"signal", or_null(p.signal)},
          {"ended_s", or_null(p.ended_s)},
          {"rss_peak", p.rss_peak},
          {"cause", or_null(p.cause)},
          {"lines", lines}};
}

json to_json(const LoadTarget& t) {
  json j = {{"pid", or_null(t.pid)}, {"url", or_null(t.url)}, {"last", t.last},
            {"rss_max", t.rss_max},  {"cpu_max", t.cpu_max},  {"event", t.event}};
  if (!t.series.is_null()) j["series"] = t.series;
  if (t.process) j["process"] = to_json(*t.process);
  return j;
}

json to_json(const LoadCluster& c) {
  json others = json::array();
  for (const LoadClusterHost& h : c.others) {
    others.push_back(
        {{"host", h.host}, {"share", h.share}, {"state", h.state}, {"taking_part", h.taking_part}});
  }
  return {
      {"hosts", c.hosts}, {"share", c.share}, {"origin", or_null(c.origin)}, {"others", others}};
}

json to_json(const LoadStepTotals& s) {
  return {{"index", s.index},
          {"name", s.name},
          {"requests", s.requests},
          {"errors", to_json(s.errors)},
          {"latency", to_json(s.latency)},
          {"latency_raw", to_json(s.latency_raw)}};
}

}  // namespace

json to_json(const Latency& l) {
  return {{"count", l.count}, {"min", l.min}, {"mean", l.mean},  {"p50", l.p50}, {"p90", l.p90},
          {"p95", l.p95},     {"p99", l.p99}, {"p99.9", l.p999}, {"max", l.max}};
}

json to_json(const LoadErrors& e) {
  return {{"count", e.count},         {"rate", e.rate},       {"status", e.status},
          {"transport", e.transport}, {"timeout", e.timeout}, {"expect", e.expect}};
}

namespace {

// The answer's lists: its steps, thresholds, failure reasons, events and slowest requests.
void add_lists(json& j, const LoadAnswer& a) {
  j["steps"] = detail::array_of(a.steps, [](const LoadStepTotals& s) { return to_json(s); });
  j["thresholds"] = detail::array_of(a.thresholds, [](const ThresholdOutcome& t) -> json {
    return {{"name", t.name}, {"value", t.value}, {"ok", t.ok}};
  });
  j["reasons"] = a.reasons;
  j["reason_traces"] = a.reason_traces;
  j["events"] = detail::array_of(a.events, [](const LoadEvent& e) -> json {
    return {{"t", e.t}, {"kind", e.kind}, {"text", e.text}};
  });
  j["slowest"] = detail::array_of(a.slowest, [](const LoadSlowRequest& q) -> json {
    return {{"t", q.t},           {"step", q.step},       {"step_name", q.step_name}, {"ms", q.ms},
            {"status", q.status}, {"outcome", q.outcome}, {"trace_id", q.trace_id}};
  });
}

}  // namespace

json to_json(const LoadAnswer& a) {
  json late = to_json(a.start_lateness.late);
  late["over_5ms"] = a.start_lateness.over_5ms;
  const LoadIterations& it = a.iterations;
  const LoadConnections& c = a.connections;
  json j = {{"id", a.id},
            {"name", a.name},
            {"state", a.state},
            {"reason", a.reason},
            {"model", a.model},
            {"load", a.load},
            {"created", a.created},
            {"ended", or_null(a.ended)},
            {"duration_s", a.duration_s},
            {"elapsed_s", a.elapsed_s},
            {"workers", a.workers},
            {"vus", a.vus},
            {"vus_max", a.vus_max},
            {"requests", a.requests},
            {"rps", a.rps},
            {"bytes", a.bytes},
            {"iterations",
             {{"passed", it.passed},
              {"failed", it.failed},
              {"dropped", it.dropped},
              {"interrupted", it.interrupted}}},
            {"errors", to_json(a.errors)},
            {"connections",
             {{"open", c.open},
              {"max", c.max},
              {"opened", c.opened},
              {"failed", c.failed},
              {"closed", c.closed},
              {"close_codes", c.close_codes}}},
            {"messages",
             {{"sent", a.messages.sent},
              {"received", a.messages.received},
              {"sent_per_s", a.messages.sent_per_s},
              {"received_per_s", a.messages.received_per_s}}},
            {"tls",
             {{"handshakes", a.tls.handshakes},
              {"full", a.tls.full},
              {"resumed", a.tls.resumed},
              {"handshake", to_json(a.tls.handshake)}}},
            {"protocols", {{"HTTP/1.1", a.protocols.http1}, {"HTTP/2", a.protocols.http2}}},
            {"corrected", a.corrected},
            {"latency", to_json(a.latency)},
            {"latency_raw", to_json(a.latency_raw)},
            {"start_lateness", late}};
  add_lists(j, a);
  if (a.target) j["target"] = to_json(*a.target);
  if (a.cluster) j["cluster"] = to_json(*a.cluster);
  if (!a.series.is_null()) j["series"] = a.series;
  return j;
}

namespace {

Result<LoadAnswer> read_load(const json& j, const std::string& path) {
  FieldReader r(j, path);
  LoadAnswer a;
  r.text("id", a.id);
  r.text("name", a.name);
  r.text("state", a.state);
  r.text("reason", a.reason);
  r.text("model", a.model);
  r.any("load", a.load);
  r.text("created", a.created);
  if (present(j, "ended")) r.text("ended", a.ended.emplace());
  r.number("duration_s", a.duration_s);
  r.number("elapsed_s", a.elapsed_s);
  r.i64("workers", a.workers);
  r.u64("vus", a.vus);
  r.u64("vus_max", a.vus_max);
  r.u64("requests", a.requests);
  r.number("rps", a.rps);
  r.u64("bytes", a.bytes);
  r.boolean("corrected", a.corrected);
  if (r.ok()) read_parts(r, j, a);
  read_lists(r, j, a);
  read_target(r, j, a);
  read_cluster(r, j, a);
  r.any("series", a.series);
  if (!r.ok()) return r.status();
  return a;
}

}  // namespace

Result<LoadAnswer> load_from_json(const json& j) { return read_load(j, "load"); }

Result<std::vector<LoadAnswer>> loads_from_json(const json& answer) {
  if (!answer.is_object() || !answer.contains("loads") || !answer["loads"].is_array()) {
    return protocol_error("GET /loads: expected an object with a \"loads\" array");
  }
  std::vector<LoadAnswer> out;
  for (size_t i = 0; i < answer["loads"].size(); ++i) {
    auto a = read_load(answer["loads"][i], "loads[" + std::to_string(i) + "]");
    if (!a) return a.status();
    out.push_back(std::move(*a));
  }
  return out;
}

}  // namespace corral::api
