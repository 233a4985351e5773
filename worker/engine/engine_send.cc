// Sending a step's request: through the gates of per-target limits (worker/engine/gates.h),
// then, when it is built, past the host's lease (engine_lease.cc), to the HTTP client.
#include <utility>

#include "shared/http/origin.h"
#include "worker/engine/engine.h"
#include "worker/engine/instance.h"
#include "worker/otlp/span_exporter.h"

namespace corral::worker {

void Engine::send(Instance& in) {
  in.cp.tries += 1;
  if (in.run->sink != nullptr) {
    in.send_ns = uv_hrtime();
  } else if (!gates_.empty()) {
    std::string origin = request_origin(in);
    if (!origin.empty() && gates_.submit(in.run->id, in.run->shape.priority, origin, in.serial)) {
      return;
    }
  }
  dispatch(in.serial, nullptr, span_for(in));
}

void Engine::resolve_http(Run& r) const {
  const scenario::Scenario& sc = *r.scenario;
  const http::TlsOptions scenario_tls = sc.tls.over(default_tls_);
  std::shared_ptr<const http::TlsOptions> shared;  // steps with the same options share them
  for (const scenario::Step& step : sc.steps) {
    const auto& spec = step.request;
    http::TlsOptions tls = spec.tls ? spec.tls->over(scenario_tls) : scenario_tls;
    if (tls == default_tls_) {
      r.tls.push_back(nullptr);
    } else {
      if (!shared || *shared != tls) shared = std::make_shared<const http::TlsOptions>(tls);
      r.tls.push_back(shared);
    }
    r.versions.push_back(spec.http_version.value_or(sc.http_version.value_or(default_version_)));
  }
  if (!sc.otlp_endpoint.empty()) {
    r.otlp_url = std::make_shared<const std::string>(otlp::traces_url(sc.otlp_endpoint));
  }
}

void Engine::abandon_request(const Instance& in) {
  if (in.requesting && in.run->sink == nullptr) http_.cancel(in.serial);
}

std::string Engine::request_origin(const Instance& in) const {
  InstanceVars vars(in, secrets_);
  Status error;
  std::string url = in.step().request.url.expand(vars, &error);
  // (A URL that does not expand passes no gate: building the request ends the instance.)
  return error.is_ok() ? http::origin_of(url) : "";
}

void Engine::dispatch(uint64_t serial, std::shared_ptr<Gates::Pass> pass,
                      std::shared_ptr<PendingSpan> span) {
  // Built when the client has room for it (see HttpClient::send_lazy); by then the instance may
  // have been cancelled or handed back.
  http_.send_lazy(
      [this, serial, pass, span]() -> std::optional<HttpRequest> {
        std::optional<HttpRequest> req;
        if (auto it = instances_.find(serial); it != instances_.end()) {
          Instance& due = *it->second;
          ipc::InHandScope scope(in_hand_, due.run->id, due.index);
          if (leased(due, Held::kSend)) {
            guarded(serial, "building a request", [&] { req = make_request(due); });
          } else {
            due.cp.tries -= 1;  // not made: send() counts it again when the lease comes
          }
          if (req && span) begin_span(*span, due, *req);
        }
        if (!req && pass) gates_.done(*pass, false);
        return req;
      },
      [this, serial, pass, span](HttpResponse&& resp) {
        if (pass) gates_.done(*pass, true);
        if (span) end_span(*span, resp);
        // (An instance cancelled while its request was in flight is gone.)
        if (auto it = instances_.find(serial); it != instances_.end()) {
          Instance& live = *it->second;
          live.requesting = false;
          ipc::InHandScope scope(in_hand_, live.run->id, live.index);
          guarded(serial, "handling a response",
                  [&] { live.runner().on_response(*this, live, std::move(resp)); });
        }
        // After the response was measured and judged: the span's encoding is not its latency.
        if (span) export_span(*span);
      });
}

}  // namespace corral::worker
