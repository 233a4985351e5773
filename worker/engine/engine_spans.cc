// The spans of a run's requests, for a collector (scenario "otlp_endpoint",
// worker/otlp/span_exporter.h). A run that exports none pays a null test per request.
#include <time.h>

#include <string_view>

#include "shared/http/message.h"
#include "worker/engine/engine.h"
#include "worker/engine/instance.h"
#include "worker/otlp/span_exporter.h"

namespace corral::worker {
namespace {

int64_t unix_ns_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The value of the request's traceparent header (the engine's, or the step's own); "" if none.
std::string_view traceparent_of(const HttpRequest& req) {
  constexpr std::string_view kName = "traceparent:";
  for (std::string_view h : req.headers) {
    if (!http::iequals(h.substr(0, kName.size()), kName)) continue;
    h.remove_prefix(kName.size());
    while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
    return h;
  }
  return "";
}

}  // namespace

struct Engine::PendingSpan {
  otlp::ClientSpan span;
  std::shared_ptr<const std::string> endpoint;
};

std::shared_ptr<Engine::PendingSpan> Engine::span_for(const Instance& in) const {
  if (!in.run->otlp_url) return nullptr;
  auto pending = std::make_shared<PendingSpan>();
  pending->endpoint = in.run->otlp_url;
  return pending;
}

void Engine::begin_span(PendingSpan& pending, const Instance& in, const HttpRequest& req) const {
  auto parent = parse_traceparent(traceparent_of(req));
  if (!parent) return;  // the scenario sends none (trace_context false): no span to name
  otlp::ClientSpan& s = pending.span;
  s.trace = parent->trace;
  s.span = parent->span;
  s.name = in.step().name;
  s.method = req.method;
  s.url = secrets_.redact(req.url);
  s.run = in.run->id;
  s.instance = in.index;
  s.start_ns = unix_ns_now();
}

void Engine::end_span(PendingSpan& pending, const HttpResponse& resp) const {
  otlp::ClientSpan& s = pending.span;
  if (s.span == 0) return;
  s.end_ns = unix_ns_now();
  s.status = resp.status;
  if (resp.status == 0) s.error = secrets_.redact(resp.error);
  s.protocol = resp.protocol;
}

void Engine::export_span(PendingSpan& pending) {
  if (pending.span.span == 0) return;
  if (!spans_out_) spans_out_ = std::make_unique<otlp::SpanExporter>(loop_, http_);
  spans_out_->add(*pending.endpoint, pending.span);
}

}  // namespace corral::worker
