#include "tools/target/target.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "shared/uv/timer.h"
#include "tools/target/ws_peer.h"

namespace corral::target {
namespace {

using http::Response;
using nlohmann::json;

std::optional<uint64_t> to_u64(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Target::Target(uv_loop_t* loop)
    : loop_(loop),
      server_(
          loop, [this](http::Request&& req, http::Responder r) { handle(std::move(req), r); },
          http::ServerOptions{1 << 20, 64 << 10, 60000, 1 << 20}),
      reap_ws_(loop) {}

Target::~Target() { *alive_ = false; }

void Target::handle(http::Request&& req, http::Responder respond) {
  const std::string& p = req.path;
  if (p != "/stats" && p != "/metrics") ++requests_;  // watching the count must not change it
  if (starts_with(p, "/status/") && req.method == "GET") {
    respond.send(status(req));
  } else if (starts_with(p, "/jobs")) {
    respond.send(jobs(req));
  } else if (starts_with(p, "/flaky/")) {
    respond.send(flaky(req));
  } else if (p == "/delay") {
    delay(req, respond);
  } else if (p == "/delay-stats") {
    respond.send(
        Response::json(200, {{"most_at_once", most_delays_}, {"arrivals_ms", delay_arrivals_ms_}}));
  } else if (p == "/fail") {
    uint64_t code = to_u64(req.query_param("status").value_or("500")).value_or(500);
    if (code < 100 || code > 599) code = 500;
    respond.send(Response::error(static_cast<int>(code), "failing on request"));
  } else if (websocket(req, respond)) {
    return;
  } else if (misbehave(req, respond)) {
    return;
  } else if (p == "/metrics") {  // Prometheus text, for a load test's --watch-url
    Response r;
    r.status = 200;
    r.content_type = "text/plain; version=0.0.4";
    r.body = "# TYPE corral_target_requests_total counter\ncorral_target_requests_total " +
             std::to_string(requests_) + "\n# TYPE corral_target_connections gauge\n" +
             "corral_target_connections " + std::to_string(server_.connection_count()) + "\n";
    respond.send(std::move(r));
  } else if (p == "/stats") {
    respond.send(Response::json(200, {{"pid", ::getpid()},
                                      {"requests", requests_},
                                      {"polls", polls_},
                                      {"jobs", jobs_.size()},
                                      {"connections", server_.connection_count()},
                                      {"callbacks", callbacks_delivered_},
                                      {"websockets", ws_peers_.size()},
                                      {"ws_messages", ws_messages_},
                                      {"ws_pings", ws_pings_}}));
  } else {
    respond.send(Response::error(404, "no route for " + req.method + " " + p));
  }
}

Response Target::jobs(const http::Request& req) {
  if (req.path == "/jobs" && req.method == "POST") {
    json body = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return Response::error(400, "body must be a JSON object");
    }
    Job job;
    job.fail = body.value("fail", false);
    if (body.contains("done_after_ms")) {
      job.polls_to_done = 0;
      job.done_at_ms = uv_now(loop_) + body.value("done_after_ms", uint64_t{0});
    } else {
      job.polls_to_done = body.value("polls_to_done", 3u);
    }
    uint64_t id = next_job_++;
    if (body.contains("callback")) {
      if (!body["callback"].is_string()) return Response::error(400, "callback: expected a URL");
      job.polls_to_done = 0;
      const uint64_t after = body.value("done_after_ms", uint64_t{100});
      job.done_at_ms = uv_now(loop_) + after;
      call_back(body["callback"].get<std::string>(),
                {{"id", std::to_string(id)}, {"status", job.fail ? "failed" : "done"}}, after);
    }
    jobs_[id] = job;
    return Response::json(201, {{"id", std::to_string(id)}, {"status", "running"}});
  }
  auto id = to_u64(std::string_view(req.path).substr(std::string_view("/jobs/").size()));
  if (!starts_with(req.path, "/jobs/") || !id || req.method != "GET") {
    return Response::error(404, "no route for " + req.method + " " + req.path);
  }
  auto it = jobs_.find(*id);
  if (it == jobs_.end()) return Response::error(404, "no job " + std::to_string(*id));
  ++polls_;
  Job& job = it->second;
  job.polls += 1;
  bool ended =
      job.polls_to_done != 0 ? job.polls >= job.polls_to_done : uv_now(loop_) >= job.done_at_ms;
  const char* status = !ended ? "running" : job.fail ? "failed" : "done";
  return Response::json(200,
                        {{"id", std::to_string(*id)}, {"status", status}, {"polls", job.polls}});
}

Response Target::flaky(const http::Request& req) {
  std::string key = req.path.substr(std::string_view("/flaky/").size());
  uint64_t fail = to_u64(req.query_param("fail").value_or("1")).value_or(1);
  uint32_t& seen = flaky_[key];
  seen += 1;
  if (seen <= fail) return Response::error(503, "flaky: failure " + std::to_string(seen));
  return Response::json(200, {{"key", key}, {"attempt", seen}});
}

Response Target::status(const http::Request& req) {
  ++polls_;
  auto done_after = req.query_param("done_after");
  if (!done_after) return Response{200, "application/json", R"({"status":"N"})", {}, {}};
  uint64_t k = to_u64(*done_after).value_or(1);
  uint32_t& seen = status_polls_[req.path.substr(std::string_view("/status/").size())];
  seen += 1;
  return Response{
      200, "application/json", seen >= k ? R"({"status":"Y"})" : R"({"status":"N"})", {}, {}};
}

void Target::delay(const http::Request& req, const http::Responder& respond) {
  uint64_t ms = to_u64(req.query_param("ms").value_or("0")).value_or(0);
  // Owned by the target, not by its own callback: a timer holding itself would never be freed.
  const uint64_t id = ++next_delay_;
  auto& timer = delays_[id] = std::make_unique<uv::Timer>(loop_);
  most_delays_ = std::max(most_delays_, delays_.size());
  if (delay_arrivals_ms_.size() < 100000) delay_arrivals_ms_.push_back(uv_hrtime() / 1000000);
  timer->start(ms + delay_extra_ms_, 0, [this, id, respond, ms] {
    respond.send(Response::json(200, {{"slept_ms", ms}}));
    delays_.erase(id);  // destroys the timer inside its callback, which uv::Timer allows
  });
}

}  // namespace corral::target
