// The lean client: http:// and https:// requests straight on the worker's libuv loop, over
// HTTP/1.1 (parsed by http-parser) or HTTP/2 (nghttp2), with TLS by OpenSSL driven through
// memory, never blocking the loop. What it does not do (a proxy from the environment) goes to
// a fallback client, libcurl's (curl_client.h).
//
// Origins: one pool per scheme, host, port, TLS options and HTTP version (origin.h).
// - HTTP/1.1: up to max_connections_per_host keep-alive connections; requests beyond wait in
//   FIFO order. An idle connection stays read-watched, so one the server closes while idle (a
//   keep-alive timeout, a restart) is dropped at once; one that fails at reuse before any byte
//   of the answer came back is retried once, on a fresh connection, when the method is
//   idempotent (GET, HEAD, PUT, DELETE, OPTIONS, TRACE). "Connection: close", HTTP/1.0 and
//   close-delimited bodies end a connection after their exchange.
// - HTTP/2 (http_version "auto" over https when the server offers h2 by ALPN, or "2"): many
//   requests share one connection as streams (h2_session.h); a second connection opens only
//   when the server's stream limit is reached.
// - TLS (tls_session.h): TLS 1.2 and 1.3, SNI, the certificate verified against the system's
//   CA store (or tls.ca_file) and the host name, sessions resumed on reconnect. Handshakes run
//   in slices (link.h): thousands of new connections never hold the loop for long.
//
// Responses: chunked and Content-Length bodies and bodies ended by close; 1xx answers are
// skipped; gzip and deflate are decoded (zlib), and a body that lies about its encoding is a
// transport error. Bodies are capped like curl's (max_response) and share the worker's
// BodyBudget: a transfer past it stops reading until memory frees, and if every transfer is
// paused the largest fails. The timeout covers DNS, connect, the TLS handshake, every
// redirect and the queue.
//
// DNS: a host that is not an IP literal is resolved on libuv's thread pool and kept for 60 s.
// Loop thread only.
#pragma once

#include <uv.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/uv/handle.h"
#include "shared/uv/timer.h"
#include "worker/http/client.h"
#include "worker/http/exchange.h"
#include "worker/http/link.h"
#include "worker/http/origin_errors.h"
#include "worker/http/queued_client.h"
#include "worker/http/tls_context.h"

namespace corral::worker::lean {
class Origin;
}
namespace corral::worker::h2 {
class Session;
}

namespace corral::worker {

class LeanClient final : public QueuedClient {
 public:
  // `fallback` takes the requests this client does not handle; `budget` is shared with it.
  // Both must outlive this client.
  LeanClient(uv_loop_t* loop, ClientOptions opts, HttpClient& fallback, BodyBudget& budget);
  // Requests still in flight are dropped without calling their callbacks.
  ~LeanClient() override;
  LeanClient(const LeanClient&) = delete;
  LeanClient& operator=(const LeanClient&) = delete;

  size_t in_flight() const override { return in_flight_ + fallback_.in_flight(); }
  uint64_t completed() const override { return completed_ + fallback_.completed(); }
  uint64_t body_bytes() const override { return body_bytes_ + fallback_.body_bytes(); }
  std::vector<std::pair<std::string, OriginErrors>> origin_errors() const override;
  void unpin(uint64_t pin) override;
  HeldCounts held(uint32_t group, bool forget = false) override;
  void cancel(uint64_t tag) override;
  TlsCounts tls_counts() const override;

  // Idle pooled connections and origins known, for tests and benchmarks.
  size_t idle_connections() const;
  size_t open_connections() const;
  size_t origins() const { return origins_.size(); }

  // For the client's own parts (origin.h, h1_connection.h, h2_session.h).
  uv_loop_t* loop() const { return loop_; }
  const ClientOptions& options() const { return opts_; }
  BodyBudget& budget() { return budget_; }
  OriginErrorTable& errors() { return errors_; }
  Handshakes& handshakes() { return handshakes_; }
  void body_grew(uint64_t bytes) { body_bytes_ += bytes; }
  HeldCounts& held_counts(uint64_t pin) { return held_[static_cast<uint32_t>(pin >> 32)]; }
  void on_wire(int delta) { on_wire_ += delta; }
  // `ex` got its answer: a redirect is followed, else its callback runs now.
  void exchange_done(std::unique_ptr<lean::Exchange> ex);
  // `ex` failed (resp.error is set): its callback runs from the loop, never inside send().
  void exchange_failed(std::unique_ptr<lean::Exchange> ex);
  // A closed connection or link, freed from the loop once no callback of it can be on the
  // stack.
  template <typename T>
  void free_later(std::unique_ptr<T> p) {
    dead_.push_back(std::shared_ptr<void>(std::move(p)));
    if (dead_.size() == 1) reap_timer_.start(0, 0, [this] { dead_.clear(); });
  }
  // A connection came up speaking HTTP/2 or HTTP/1.1 (counted in tls_counts()).
  void count_connection(bool h2) { ++(h2 ? counts_.http2 : counts_.http1); }
  // An HTTP/2 session has frames to send: they go out once this turn of the loop is done with
  // its callbacks, before it polls again (a prepare handle) or right after the poll's callbacks
  // (a check handle), so that the requests one turn makes share a write.
  void flush_soon(h2::Session* s);
  void flush_cancel(h2::Session* s);
  // A transfer paused on the budget.
  void paused(lean::Paused* p);
  void unpaused(lean::Paused* p);

 private:
  void start(HttpRequest req, Done done) override;
  bool has_room() const override;
  void submit(std::unique_ptr<lean::Exchange> ex);
  bool follow(std::unique_ptr<lean::Exchange>& ex);
  void hand_to_fallback(std::unique_ptr<lean::Exchange> ex, uint64_t now);
  void finish(std::unique_ptr<lean::Exchange> ex);
  void release(lean::Exchange& ex);
  void deliver();
  void schedule_rebalance();
  void rebalance();
  void close_idle();
  void flush_sessions();

  uv_loop_t* loop_;
  ClientOptions opts_;
  HttpClient& fallback_;
  BodyBudget& budget_;
  bool use_proxy_;  // a proxy is set in the environment: requests go to curl, which honours it
  tls::Contexts contexts_;
  Handshakes handshakes_;
  std::unordered_map<std::string, std::unique_ptr<lean::Origin>> origins_;
  std::vector<std::unique_ptr<lean::Exchange>> finished_;  // callbacks to run from the loop
  std::vector<lean::Paused*> paused_;
  std::vector<std::shared_ptr<void>> dead_;
  uv::Timer deliver_timer_;
  uv::Timer rebalance_timer_;
  uv::Timer reap_timer_;
  uv::Timer idle_timer_;
  uv::Handle<uv_prepare_t> before_poll_;
  uv::Handle<uv_check_t> after_poll_;
  std::vector<h2::Session*> to_flush_;
  bool rebalance_pending_ = false;
  size_t started_ = 0;  // made and handed to an origin, not yet finished
  size_t on_wire_ = 0;  // exchanges on a connection or stream
  uint64_t completed_ = 0;
  uint64_t body_bytes_ = 0;
  OriginErrorTable errors_;
  TlsCounts counts_;
  std::unordered_map<uint32_t, HeldCounts> held_;  // by pin group
};

}  // namespace corral::worker
