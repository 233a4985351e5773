// Exporting the spans of a worker's requests to a collector over OTLP/HTTP, JSON encoding
// (a scenario's "otlp_endpoint", docs/scenarios.md "Trace context"). Each HTTP request that
// carried a traceparent is one client span: the traceparent's trace and span ids, the step's
// name, method, URL, status and how long it took. The server's own spans name that span as
// their parent, so a trace viewer shows corral's request above the server's work.
//
// Each span is written into its batch's JSON as it comes, so that no turn of the loop pays for
// a whole batch (a load test can export tens of thousands a second). Batches wait in a queue per
// endpoint and go with up to kBatch spans, once a second or as soon as one is full, one POST in
// flight per endpoint, through the worker's HTTP client.
// A queue holds at most kMaxQueued: past that, while the collector is slow or gone, spans are
// dropped and counted, never held without bound; a failed POST loses its batch. Both are
// logged, at most once a minute per endpoint. Telemetry, not a record: the journal keeps
// corral's own record of every step. Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shared/trace_context.h"
#include "shared/uv/timer.h"
#include "worker/http/client.h"

namespace corral::worker::otlp {

constexpr size_t kBatch = 512;
constexpr size_t kMaxQueued = 2048;
constexpr uint64_t kFlushEveryMs = 1000;

// One HTTP request, as a client span.
struct ClientSpan {
  TraceId trace;
  uint64_t span = 0;
  std::string name;  // the step's
  std::string method, url;
  std::string run;
  uint32_t instance = 0;             // a load test's: the virtual user
  int64_t start_ns = 0, end_ns = 0;  // Unix time
  int status = 0;                    // 0: no response
  std::string error;                 // the transport error, when there was no response
  const char* protocol = "";         // "HTTP/1.1", "HTTP/2", "" unknown
};

// An ExportTraceServiceRequest in OTLP's JSON encoding: one resource (service.name "corral",
// host.name `host`), one scope, the spans (kind client; status error for a response of 400 or
// more, or none).
std::string encode_json(const std::vector<ClientSpan>& spans, const std::string& host);

// "http://host:port/v1/traces" for an endpoint given as an origin (no path, or "/"); the URL
// unchanged when it has a path.
std::string traces_url(const std::string& endpoint);

class SpanExporter {
 public:
  // `http` must outlive the exporter; a POST still in flight when the exporter goes is
  // answered to no one.
  SpanExporter(uv_loop_t* loop, HttpClient& http);
  ~SpanExporter() { *alive_ = false; }
  // `endpoint`: the full URL to POST to (traces_url).
  void add(const std::string& endpoint, const ClientSpan& span);
  // Counts since the exporter started, of every endpoint.
  struct Counts {
    uint64_t sent = 0;     // spans the collector accepted (a 2xx answer)
    uint64_t dropped = 0;  // spans dropped: the queue was full
    uint64_t lost = 0;     // spans of batches whose POST failed
  };
  Counts counts() const { return counts_; }

 private:
  struct Batch {
    std::string body;  // the request so far: each span's JSON is followed by a comma
    size_t n = 0;
  };
  struct Queue {
    std::deque<Batch> batches;  // the last one fills; the others are full
    size_t queued = 0;          // spans in them
    bool sending = false;
    uint64_t dropped = 0, lost = 0;  // not logged yet
    int64_t logged_ms = 0;           // when they last were
    std::string last_error;
  };
  // POSTs the first batch, unless one is in flight; with `all`, the batch that fills too.
  void flush(const std::string& endpoint, Queue& q, bool all);
  void on_sent(const std::string& endpoint, size_t n, const HttpResponse& resp);
  void log_losses(const std::string& endpoint, Queue& q);

  HttpClient& http_;
  uv::Timer timer_;
  bool ticking_ = false;
  std::string host_;
  std::map<std::string, Queue> queues_;  // by endpoint
  Counts counts_;
  // Callbacks of POSTs in flight check this: the exporter may go first.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace corral::worker::otlp
