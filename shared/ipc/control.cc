#include "shared/ipc/control.h"

#include <charconv>
#include <utility>

#include "shared/ipc/fields.h"
#include "shared/ipc/protocol.h"

namespace corral::ipc {

using detail::FieldReader;
using nlohmann::json;

namespace {

// Sets `j[name]` unless `value` is null: optional documents stay out of the frame.
void put_document(json& j, const char* name, const json& value) {
  if (!value.is_null()) j[name] = value;
}

template <typename T>
Result<T> done(const FieldReader& r, T m) {
  if (!r.ok()) return r.status();
  return m;
}

// `secrets`: an object of strings.
void read_secrets(FieldReader& r, std::map<std::string, std::string>& out) {
  json secrets;
  r.object("secrets", secrets);
  if (!r.ok() || secrets.is_null()) return;
  for (const auto& [name, value] : secrets.items()) {
    if (!value.is_string()) {
      r.fail("secrets", "expected " + name + " to be a string");
      return;
    }
    out[name] = value.get<std::string>();
  }
}

void read_callback(FieldReader& r, Welcome& m) {
  json callback;
  r.object("callback", callback);
  if (!r.ok() || callback.is_null()) return;
  FieldReader c(callback, r.path("callback"));
  c.text("base", m.callback_base);
  c.text("key", m.callback_key);
  c.known({"base", "key"});
  r.take(c);
}

}  // namespace

json to_json(const Hello& m) {
  return {{"protocol", m.protocol}, {"pid", m.pid}, {"slot", m.slot}};
}

template <>
Result<Hello> read<Hello>(const json& p) {
  FieldReader r(p, "hello");
  Hello m;
  r.u32("protocol", m.protocol, true);
  r.i64("pid", m.pid);
  r.i32("slot", m.slot);
  r.known({"protocol", "pid", "slot"});
  return done(r, m);
}

Status check_hello(const json& p) {
  const json* version = p.is_object() && p.contains("protocol") ? &p["protocol"] : nullptr;
  if (version != nullptr && *version != kProtocolVersion) {
    return protocol_error("speaks protocol " + version->dump() + ", master speaks " +
                          std::to_string(kProtocolVersion));
  }
  return read<Hello>(p).status();
}

json to_json(const Welcome& m) {
  json j = {{"protocol", m.protocol},
            {"slot", m.slot},
            {"heartbeat_ms", m.heartbeat_ms},
            {"max_memory_bytes", m.max_memory_bytes},
            {"kernel_memory_bytes", m.kernel_memory_bytes},
            {"log_max_bytes", m.log_max_bytes},
            {"log_files", m.log_files},
            {"log_level", m.log_level},
            {"max_response_bytes", m.max_response_bytes},
            {"response_memory_bytes", m.response_memory_bytes},
            {"http_client", m.http_client},
            {"http_version", m.http_version},
            {"max_connections_per_host", m.max_connections_per_host},
            {"secrets", m.secrets},
            {"callback", {{"base", m.callback_base}, {"key", m.callback_key}}}};
  put_document(j, "tls", m.tls);
  if (m.lease_until_ms != kNoLease) j["lease_until_ms"] = m.lease_until_ms;
  return j;
}

template <>
Result<Welcome> read<Welcome>(const json& p) {
  FieldReader r(p, "welcome");
  Welcome m;
  r.u32("protocol", m.protocol);
  r.i32("slot", m.slot, true);
  r.u64("heartbeat_ms", m.heartbeat_ms);
  r.u64("max_memory_bytes", m.max_memory_bytes);
  r.u64("kernel_memory_bytes", m.kernel_memory_bytes);
  r.u64("log_max_bytes", m.log_max_bytes);
  r.i32("log_files", m.log_files);
  r.text("log_level", m.log_level);
  r.u64("max_response_bytes", m.max_response_bytes);
  r.u64("response_memory_bytes", m.response_memory_bytes);
  r.text("http_client", m.http_client);
  r.text("http_version", m.http_version);
  r.object("tls", m.tls);
  r.i32("max_connections_per_host", m.max_connections_per_host);
  read_secrets(r, m.secrets);
  read_callback(r, m);
  r.u64("lease_until_ms", m.lease_until_ms);
  r.known({"protocol", "slot", "heartbeat_ms", "max_memory_bytes", "kernel_memory_bytes",
           "log_max_bytes", "log_files", "log_level", "max_response_bytes", "response_memory_bytes",
           "http_client", "http_version", "tls", "max_connections_per_host", "secrets", "callback",
           "lease_until_ms"});
  if (r.ok() && m.http_client != "lean" && m.http_client != "curl") {
    r.fail("http_client", "expected \"lean\" or \"curl\", got \"" + m.http_client + "\"");
  }
  if (r.ok() && m.heartbeat_ms == 0) r.fail("heartbeat_ms", "expected more than 0");
  return done(r, m);
}

json to_json(const Heartbeat& m) {
  json j = {{"seq", m.seq},
            {"loop_lag_ms", m.loop_lag_ms},
            {"rss_bytes", m.rss_bytes},
            {"idle_rss_bytes", m.idle_rss_bytes},
            {"active", m.active},
            {"requests", m.requests}};
  put_document(j, "http_errors", m.http_errors);
  put_document(j, "limits", m.limits);
  return j;
}

template <>
Result<Heartbeat> read<Heartbeat>(const json& p) {
  FieldReader r(p, "heartbeat");
  Heartbeat m;
  r.u64("seq", m.seq);
  r.number("loop_lag_ms", m.loop_lag_ms);
  r.u64("rss_bytes", m.rss_bytes);
  r.u64("idle_rss_bytes", m.idle_rss_bytes);
  r.u64("active", m.active);
  r.u64("requests", m.requests);
  r.any("http_errors", m.http_errors);
  r.any("limits", m.limits);
  r.known({"seq", "loop_lag_ms", "rss_bytes", "idle_rss_bytes", "active", "requests", "http_errors",
           "limits"});
  return done(r, m);
}

json to_json(const Stop& m) { return {{"grace_ms", m.grace_ms}}; }

template <>
Result<Stop> read<Stop>(const json& p) {
  FieldReader r(p, "stop");
  Stop m;
  r.u64("grace_ms", m.grace_ms);
  r.known({"grace_ms"});
  return done(r, m);
}

json to_json(const Leaving& m) { return {{"reason", m.reason}, {"rss_bytes", m.rss_bytes}}; }

template <>
Result<Leaving> read<Leaving>(const json& p) {
  FieldReader r(p, "leaving");
  Leaving m;
  r.text("reason", m.reason, true);
  r.u64("rss_bytes", m.rss_bytes);
  r.known({"reason", "rss_bytes"});
  return done(r, m);
}

json to_json(const DefineRun& m) {
  json j = {{"run", m.run},   {"scenario", m.scenario},     {"vars", m.vars},
            {"size", m.size}, {"created_ms", m.created_ms}, {"priority", m.priority}};
  put_document(j, "data", m.data);
  return j;
}

template <>
Result<DefineRun> read<DefineRun>(const json& p) {
  FieldReader r(p, "define_run");
  DefineRun m;
  r.text("run", m.run, true);
  r.object("scenario", m.scenario, true);
  r.object("vars", m.vars);
  r.u32("size", m.size);
  r.i64("created_ms", m.created_ms);
  r.u32("priority", m.priority);
  r.object("data", m.data);
  r.known({"run", "scenario", "vars", "size", "created_ms", "priority", "data"});
  return done(r, m);
}

json to_json(const Start& m) {
  if (!m.resume.is_null()) return {{"run", m.run}, {"resume", m.resume}};
  return {{"run", m.run}, {"first", m.first}, {"count", m.count}};
}

StartWriter::StartWriter(const std::string& run) {
  text_ = "{\"run\":";
  append_json(json(run), text_);
  text_ += ",\"resume\":{";
}

void StartWriter::key(uint32_t index) {
  if (count_++ > 0) text_ += ',';
  text_ += '"';
  char buf[12];
  text_.append(buf, std::to_chars(buf, buf + sizeof buf, index).ptr);
  text_ += "\":";
}

void StartWriter::add(uint32_t index, const Checkpoint& cp) {
  key(index);
  append_json(cp, text_);
}

std::string StartWriter::finish() {
  text_ += "}}";
  return std::move(text_);
}

template <>
Result<Start> read<Start>(const json& p) {
  FieldReader r(p, "start");
  Start m;
  r.text("run", m.run, true);
  r.u32("first", m.first);
  r.u32("count", m.count);
  r.object("resume", m.resume);
  r.known({"run", "first", "count", "resume"});
  if (r.ok() && !m.resume.is_null() && (p.contains("first") || p.contains("count"))) {
    r.fail("resume", "expected either resume or first and count, not both");
  }
  return done(r, m);
}

json to_json(const Cancel& m) { return {{"run", m.run}}; }

template <>
Result<Cancel> read<Cancel>(const json& p) {
  FieldReader r(p, "cancel");
  Cancel m;
  r.text("run", m.run, true);
  r.known({"run"});
  return done(r, m);
}

json to_json(const Release& m) { return {{"count", m.count}}; }

template <>
Result<Release> read<Release>(const json& p) {
  FieldReader r(p, "release");
  Release m;
  r.u32("count", m.count, true);
  r.known({"count"});
  return done(r, m);
}

json to_json(const Lease& m) { return {{"until_ms", m.until_ms}}; }

template <>
Result<Lease> read<Lease>(const json& p) {
  FieldReader r(p, "lease");
  Lease m;
  r.u64("until_ms", m.until_ms, true);
  r.known({"until_ms"});
  return done(r, m);
}

json to_json(const Callback& m) {
  json j = {{"run", m.run}, {"index", m.index}, {"step", m.step}};
  if (m.heartbeat) j["heartbeat"] = true;
  if (!m.heartbeat || !m.body.is_null()) j["body"] = m.body;
  return j;
}

template <>
Result<Callback> read<Callback>(const json& p) {
  FieldReader r(p, "callback");
  Callback m;
  r.text("run", m.run, true);
  r.u32("index", m.index, true);
  r.u32("step", m.step, true);
  r.boolean("heartbeat", m.heartbeat);
  r.any("body", m.body, !m.heartbeat);
  r.known({"run", "index", "step", "heartbeat", "body"});
  return done(r, m);
}

json to_json(const LoadStart& m) {
  return {{"load", m.load}, {"scenario", m.scenario}, {"vars", m.vars},
          {"spec", m.spec}, {"index", m.index},       {"of", m.of},
          {"host", m.host}, {"hosts", m.hosts},       {"delay_ms", m.delay_ms}};
}

template <>
Result<LoadStart> read<LoadStart>(const json& p) {
  FieldReader r(p, "load_start");
  LoadStart m;
  r.text("load", m.load, true);
  r.object("scenario", m.scenario, true);
  r.object("vars", m.vars);
  r.object("spec", m.spec, true);
  r.u32("index", m.index);
  r.u32("of", m.of);
  r.u32("host", m.host);
  r.u32("hosts", m.hosts);
  r.u64("delay_ms", m.delay_ms);
  r.known({"load", "scenario", "vars", "spec", "index", "of", "host", "hosts", "delay_ms"});
  if (r.ok() && (m.of == 0 || m.index >= m.of)) r.fail("index", "expected an index below of");
  if (r.ok() && (m.hosts == 0 || m.host >= m.hosts)) r.fail("host", "expected a host below hosts");
  return done(r, m);
}

json to_json(const LoadStop& m) { return {{"load", m.load}}; }

template <>
Result<LoadStop> read<LoadStop>(const json& p) {
  FieldReader r(p, "load_stop");
  LoadStop m;
  r.text("load", m.load, true);
  r.known({"load"});
  return done(r, m);
}

json to_json(const Handback& m) {
  json j = {{"instances", m.instances}};
  if (m.released) j["released"] = true;
  return j;
}

template <>
Result<Handback> read<Handback>(const json& p) {
  FieldReader r(p, "handback");
  Handback m;
  r.object("instances", m.instances);
  r.boolean("released", m.released);
  r.known({"instances", "released"});
  if (m.instances.is_null()) m.instances = json::object();
  return done(r, m);
}

Result<Handback> read_handback(json&& p) {
  json instances = json::object();
  if (auto it = p.find("instances"); it != p.end() && it->is_object()) std::swap(instances, *it);
  auto m = read<Handback>(p);  // the rest, and "instances" of a wrong type, checked as ever
  if (m) m->instances = std::move(instances);
  return m;
}

}  // namespace corral::ipc
