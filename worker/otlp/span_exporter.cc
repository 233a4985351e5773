#include "worker/otlp/span_exporter.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>
#include <utility>

#include "shared/http/origin.h"
#include "shared/proc.h"
#include "shared/text/utf8.h"

namespace corral::worker::otlp {
namespace {

constexpr uint64_t kPostTimeoutMs = 10000;
constexpr int64_t kLogEveryMs = 60000;

// The JSON is written directly, not built as a document: a load test can export tens of
// thousands of spans a second from the worker's loop.

// Appends `text` as a JSON string; bytes that are not UTF-8 become U+FFFD.
void put_string(std::string& out, std::string_view text) {
  const std::string fixed = text::is_utf8(text) ? std::string() : text::to_utf8(text);
  if (!fixed.empty()) text = fixed;
  out += '"';
  size_t run = 0;  // the start of the bytes not written yet, which need no escape
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c != '"' && c != '\\' && c >= 0x20) continue;
    out.append(text.substr(run, i - run));
    char esc[8];
    std::snprintf(esc, sizeof esc, c < 0x20 ? "\\u%04x" : "\\%c", c);
    out += esc;
    run = i + 1;
  }
  out.append(text.substr(run));
  out += '"';
}

// An attribute: {"key": K, "value": {"stringValue": V}}, or "intValue", which OTLP's JSON
// encoding writes as a string.
void put_attr(std::string& out, const char* key, std::string_view value, bool integer = false) {
  out += R"({"key":")";
  out += key;
  out += integer ? R"(","value":{"intValue":)" : R"(","value":{"stringValue":)";
  put_string(out, value);
  out += "}},";
}

// A span, kind 3 (SPAN_KIND_CLIENT), and a comma.
void put_span(std::string& out, const ClientSpan& s) {
  out += R"({"traceId":")";
  append_hex(out, s.trace.hi);
  append_hex(out, s.trace.lo);
  out += R"(","spanId":")";
  append_hex(out, s.span);
  out += R"(","name":)";
  put_string(out, s.name);
  out += R"(,"kind":3,"startTimeUnixNano":")";
  out += std::to_string(s.start_ns);
  out += R"(","endTimeUnixNano":")";
  out += std::to_string(s.end_ns);
  out += R"(","attributes":[)";
  put_attr(out, "http.request.method", s.method);
  put_attr(out, "url.full", s.url);
  put_attr(out, "corral.run", s.run);
  put_attr(out, "corral.instance", std::to_string(s.instance), true);
  if (s.status != 0) put_attr(out, "http.response.status_code", std::to_string(s.status), true);
  if (*s.protocol != '\0') {
    put_attr(out, "network.protocol.version",
             std::string_view(s.protocol) == "HTTP/2" ? "2" : "1.1");
  }
  if (s.status == 0) put_attr(out, "error.type", s.error.empty() ? "no response" : s.error);
  if (s.status >= 400) put_attr(out, "error.type", std::to_string(s.status));
  out.back() = ']';
  // Status error (2) for no response or one of 400 or more; unset otherwise.
  if (s.status == 0) {
    out += R"(,"status":{"code":2,"message":)";
    put_string(out, s.error);
    out += '}';
  } else if (s.status >= 400) {
    out += R"(,"status":{"code":2})";
  }
  out += "},";
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

// The start of an ExportTraceServiceRequest, up to its list of spans, with room for a batch.
std::string open_batch(const std::string& host) {
  std::string out;
  out.reserve(kBatch * 640);
  out += R"({"resourceSpans":[{"resource":{"attributes":[)";
  put_attr(out, "service.name", "corral");
  if (!host.empty()) put_attr(out, "host.name", host);
  out.back() = ']';
  out +=
      R"(},"scopeSpans":[{"scope":{"name":"corral","version":")" CORRAL_VERSION R"("},"spans":[)";
  return out;
}

// Ends the list of spans (each followed by a comma) and the request.
void close_batch(std::string& out) {
  if (out.back() == ',') out.pop_back();
  out += "]}]}]}";
}

}  // namespace

std::string encode_json(const std::vector<ClientSpan>& spans, const std::string& host) {
  std::string out = open_batch(host);
  for (const ClientSpan& s : spans) put_span(out, s);
  close_batch(out);
  return out;
}

std::string traces_url(const std::string& endpoint) {
  const std::string origin = http::origin_of(endpoint);
  if (origin.empty()) return endpoint;
  const size_t scheme_end = endpoint.find("://");
  const size_t path = endpoint.find('/', scheme_end + 3);
  if (path == std::string::npos) return endpoint + "/v1/traces";
  if (endpoint.compare(path, std::string::npos, "/") == 0) return endpoint + "v1/traces";
  return endpoint;
}

SpanExporter::SpanExporter(uv_loop_t* loop, HttpClient& http)
    : http_(http), timer_(loop), host_(host_name()) {
  timer_.unref();
}

void SpanExporter::add(const std::string& endpoint, const ClientSpan& span) {
  Queue& q = queues_[endpoint];
  if (q.queued >= kMaxQueued) {
    ++q.dropped;
    ++counts_.dropped;
    log_losses(endpoint, q);
    return;
  }
  if (q.batches.empty() || q.batches.back().n >= kBatch) {
    q.batches.push_back({open_batch(host_), 0});
  }
  Batch& b = q.batches.back();
  put_span(b.body, span);
  ++b.n;
  ++q.queued;
  if (b.n >= kBatch) flush(endpoint, q, false);
  if (!ticking_) {
    ticking_ = true;
    timer_.start(kFlushEveryMs, kFlushEveryMs, [this] {
      for (auto& [url, queue] : queues_) flush(url, queue, true);
    });
  }
}

void SpanExporter::flush(const std::string& endpoint, Queue& q, bool all) {
  if (q.sending || q.batches.empty()) return;
  if (!all && q.batches.front().n < kBatch) return;
  Batch batch = std::move(q.batches.front());
  q.batches.pop_front();
  q.queued -= batch.n;
  HttpRequest req;
  req.method = "POST";
  req.url = endpoint;
  req.headers = {"Content-Type: application/json"};
  close_batch(batch.body);
  req.body = std::move(batch.body);
  req.timeout_ms = kPostTimeoutMs;
  q.sending = true;
  http_.send(std::move(req), [this, alive = alive_, endpoint, n = batch.n](HttpResponse&& resp) {
    if (*alive) on_sent(endpoint, n, resp);
  });
}

void SpanExporter::on_sent(const std::string& endpoint, size_t n, const HttpResponse& resp) {
  Queue& q = queues_[endpoint];
  q.sending = false;
  if (resp.status >= 200 && resp.status < 300) {
    counts_.sent += n;
  } else {
    q.lost += n;
    counts_.lost += n;
    q.last_error = resp.status == 0 ? resp.error : "HTTP " + std::to_string(resp.status);
  }
  log_losses(endpoint, q);
  flush(endpoint, q, false);
}

void SpanExporter::log_losses(const std::string& endpoint, Queue& q) {
  if (q.dropped == 0 && q.lost == 0) return;
  const int64_t t = unix_ms_now();
  if (q.logged_ms != 0 && t - q.logged_ms < kLogEveryMs) return;
  q.logged_ms = t;
  if (q.lost != 0) {
    spdlog::warn("otlp {}: {} spans lost, the collector did not take them ({})", endpoint, q.lost,
                 q.last_error);
  }
  if (q.dropped != 0) {
    spdlog::warn("otlp {}: {} spans dropped, more than {} waited for the collector", endpoint,
                 q.dropped, kMaxQueued);
  }
  q.dropped = q.lost = 0;
}

}  // namespace corral::worker::otlp
