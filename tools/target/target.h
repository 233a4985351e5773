// corral-target: a small HTTP API on 127.0.0.1 that behaves like the job APIs corral tests, so
// the demo, the integration tests and the benchmarks have a real, local server to talk to.
//
//   POST /jobs {"polls_to_done": 3} or {"done_after_ms": 500}, optional "fail": true
//                          -> 201 {"id": "7", "status": "running"}
//             with "callback": URL, the job ends after done_after_ms (default 100) and the
//             target POSTs {"id", "status"} to URL, trying again while it gets no answer or
//             a 5xx (callbacks.cc)
//   GET  /jobs/<id>        -> 200 {"id","status": "running"|"done"|"failed","polls": n}
//                             (each GET counts as one poll; the job ends after polls_to_done
//                             polls, or once done_after_ms has passed: done, or failed when
//                             "fail" was set); 404 for an unknown id
//   GET  /status/<id>      -> 200 {"status": "N"}; with ?done_after=K, "Y" from the K-th poll of
//                             that id on (the benchmark's poll endpoint)
//   GET  /delay?ms=N       -> 200 after N milliseconds (and --delay-extra-ms more)
//   GET  /delay-stats      -> {"most_at_once": n, "arrivals_ms": [t, ...]}: the most /delay
//                             requests that were waiting at once, and when each arrived (the
//                             loop's clock, ms; the first 100,000), to check per-target limits
//   GET  /fail?status=503  -> that status
//   GET  /flaky/<key>?fail=N  -> 503 for the first N requests with this key, then 200
//   GET  /stats            -> {"requests": n, "polls": n, "jobs": n, "connections": n,
//                              "callbacks": n (delivered: answered 2xx), "websockets": n (open
//                              now), "ws_messages": n (received), "ws_pings": n (received)}
//                             (requests other than /stats and /metrics; connections open now,
//                             this one too)
//   GET  /metrics          -> the same counts as Prometheus text: corral_target_requests_total,
//                             corral_target_connections
// and misbehaving ones (misbehave.cc):
//   GET  /bytes            -> 200, a body and an X-Bytes header that are not UTF-8
//   POST /bytes            -> 200 when the body is exactly those bytes, else 422
//   ANY  /redirect?code=303&to=URL  -> that status with Location: URL (default /echo)
//   GET  /redirect-loop    -> 302 to itself, forever
//   ANY  /echo             -> 200 {"method","path","query","headers": {lowercase name: value},
//                             "body"}: the request as received
//   GET  /big?bytes=N      -> 200, a JSON document of about N bytes
//   ANY  /hang             -> never answers
// WebSocket (websocket.cc; "Upgrade: websocket", subprotocols "echo" and "chat"):
//   /ws                    -> 101 (with X-Echo-Traceparent: the handshake's traceparent, if it
//                             had one), then every message back as it came; ?push_ms=N also sends
//                             {"seq": n} every N ms; ?close_after=N closes after N messages with
//                             ?close_code=C (1000; 0: a close frame with no code); ?deflate=1
//                             agrees to permessage-deflate when the client offers it;
//                             ?max_open=N answers 503 while N sockets are open
//   /ws/status?code=N      -> N, no upgrade
//   /ws/bad-accept         -> 101 with a Sec-WebSocket-Accept that answers no key
//   /ws/raw?hex=H          -> 101, then the bytes H (hex) as they are; reads and drops the rest
//   (a WebSocket to /hang never gets an answer)
// Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/http/server.h"
#include "shared/uv/timer.h"

namespace corral::target {

class WsPeer;

// The query parameter `name` of `req` as a number, or `fallback` when it is absent or not one.
uint64_t query_number(const http::Request& req, const char* name, uint64_t fallback);

struct Job {
  uint32_t polls = 0;
  uint32_t polls_to_done = 3;  // 0 when the job ends by time
  uint64_t done_at_ms = 0;     // loop time when a done_after_ms job ends
  bool fail = false;
};

class Target {
 public:
  explicit Target(uv_loop_t* loop);
  ~Target();
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;
  Status listen(const std::string& host, int port, bool reuse_port = false) {
    return server_.listen_tcp(host, port, reuse_port);
  }
  int port() const { return server_.tcp_port(); }
  // Connections open now (upgraded WebSockets excluded).
  size_t connection_count() const { return server_.connection_count(); }
  void close() { server_.close(); }
  // /delay answers this much later than it is asked to: a slower server (corral-target
  // --delay-extra-ms), for comparisons of a test against a baseline.
  void set_delay_extra_ms(uint64_t ms) { delay_extra_ms_ = ms; }
  uint64_t requests() const { return requests_; }
  uint64_t polls() const { return polls_; }
  uint64_t hanging() const { return hanging_; }  // /hang requests received
  uint64_t callbacks_delivered() const { return callbacks_delivered_; }
  size_t jobs() const { return jobs_.size(); }  // jobs created since it started
  uv_loop_t* loop() const { return loop_; }
  size_t websockets() const { return ws_peers_.size(); }  // open now
  uint64_t ws_pings() const { return ws_pings_; }

  // For the WebSocket peers (ws_peer.h).
  void count_ws_message() { ++ws_messages_; }
  void count_ws_ping() { ++ws_pings_; }
  // Closes the peer `id` and frees it on the next turn.
  void forget_ws(uint64_t id);

  // A callback being sent (callbacks.cc).
  struct Call {
    uv_work_t work{};
    uv::Timer timer;
    std::shared_ptr<bool> target_alive;
    Target* target = nullptr;
    uint64_t id = 0;
    std::string url, body;
    int tries_left = 50;
    long status = 0;  // of the last try; 0: no answer

    explicit Call(uv_loop_t* loop) : timer(loop) {}
  };

 private:
  void handle(http::Request&& req, http::Responder respond);
  http::Response jobs(const http::Request& req);
  http::Response flaky(const http::Request& req);
  http::Response status(const http::Request& req);
  void delay(const http::Request& req, const http::Responder& respond);
  // POSTs `body` to `url` in `after_ms`, trying again as callbacks.cc says.
  void call_back(std::string url, nlohmann::json body, uint64_t after_ms);
  void schedule(std::unique_ptr<Call> call, uint64_t after_ms);
  static void on_posted(uv_work_t* w, int status);
  // The misbehaving routes; false when `req` is not one of them.
  bool misbehave(const http::Request& req, const http::Responder& respond);
  // The WebSocket routes (websocket.cc); false when `req` is not for one of them.
  bool websocket(const http::Request& req, const http::Responder& respond);

  uv_loop_t* loop_;
  http::Server server_;
  std::unordered_map<uint64_t, Job> jobs_;
  std::unordered_map<std::string, uint32_t> flaky_;
  std::unordered_map<std::string, uint32_t> status_polls_;  // ids polled with ?done_after
  uint64_t next_job_ = 1;
  uint64_t requests_ = 0;
  uint64_t polls_ = 0;
  uint64_t hanging_ = 0;
  // /delay answers waiting for their timer, by a number of their own; each removes itself.
  std::unordered_map<uint64_t, std::unique_ptr<uv::Timer>> delays_;
  uint64_t next_delay_ = 0;
  uint64_t delay_extra_ms_ = 0;
  size_t most_delays_ = 0;
  std::vector<uint64_t> delay_arrivals_ms_;
  // Callbacks waiting for their time or for a retry; one on the thread pool owns itself, and
  // finds through `alive_` whether the target is still there when it comes back.
  std::unordered_map<uint64_t, std::unique_ptr<Call>> calls_;
  uint64_t next_call_ = 0;
  uint64_t callbacks_delivered_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  // Upgraded WebSocket connections, by a number of their own; they are no longer the server's.
  std::unordered_map<uint64_t, std::unique_ptr<WsPeer>> ws_peers_;
  std::vector<std::unique_ptr<WsPeer>> dead_ws_;
  uv::Timer reap_ws_;
  uint64_t next_ws_ = 0;
  uint64_t ws_messages_ = 0;
  uint64_t ws_pings_ = 0;
};

}  // namespace corral::target
