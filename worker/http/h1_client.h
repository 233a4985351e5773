// The lean HTTP/1.1 client: http:// requests straight on the worker's libuv loop, parsed by
// http-parser, with a keep-alive pool per origin. Everything else (https, a proxy from the
// environment, a redirect to https) goes to a fallback client, libcurl's (curl_client.h).
//
// Connections: up to max_connections_per_host per origin; requests beyond wait in FIFO
// order. An idle connection stays read-watched, so one the server closes while idle (a
// keep-alive timeout, a restart) is dropped at once; one that fails at reuse before any byte
// of the answer came back is retried once, on a fresh connection, when the method is
// idempotent (GET, HEAD, PUT, DELETE, OPTIONS, TRACE). "Connection: close", HTTP/1.0 and
// close-delimited bodies end a connection after their exchange.
//
// Responses: chunked and Content-Length bodies and bodies ended by close; 1xx answers are
// skipped; gzip and deflate are decoded (zlib), and a body that lies about its encoding is a
// transport error. Bodies are capped like curl's (max_response) and share the worker's
// BodyBudget: a transfer past it stops reading until memory frees, and if every transfer is
// paused the largest fails. The timeout covers DNS, connect, every redirect and the queue.
//
// DNS: a host that is not an IP literal is resolved on libuv's thread pool and kept for 60 s.
// Loop thread only.
#pragma once

#include <uv.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/uv/timer.h"
#include "worker/http/client.h"
#include "worker/http/origin_errors.h"
#include "worker/http/queued_client.h"

namespace corral::worker::h1 {
struct Exchange;
class Connection;
class Origin;
}  // namespace corral::worker::h1

namespace corral::worker {

class H1Client final : public QueuedClient {
 public:
  // `fallback` takes the requests this client does not handle; `budget` is shared with it.
  // Both must outlive this client.
  H1Client(uv_loop_t* loop, ClientOptions opts, HttpClient& fallback, BodyBudget& budget);
  // Requests still in flight are dropped without calling their callbacks.
  ~H1Client() override;
  H1Client(const H1Client&) = delete;
  H1Client& operator=(const H1Client&) = delete;

  size_t in_flight() const override { return in_flight_ + fallback_.in_flight(); }
  uint64_t completed() const override { return completed_ + fallback_.completed(); }
  uint64_t body_bytes() const override { return body_bytes_ + fallback_.body_bytes(); }
  std::vector<std::pair<std::string, OriginErrors>> origin_errors() const override;
  void unpin(uint64_t pin) override;
  HeldCounts held(uint32_t group, bool forget = false) override;
  void cancel(uint64_t tag) override;

  // Idle pooled connections and origins known, for tests and benchmarks.
  size_t idle_connections() const;
  size_t open_connections() const;
  size_t origins() const { return origins_.size(); }

  // For h1::Connection and h1::Origin, the client's own parts.
  uv_loop_t* loop() const { return loop_; }
  const ClientOptions& options() const { return opts_; }
  BodyBudget& budget() { return budget_; }
  OriginErrorTable& errors() { return errors_; }
  void body_grew(uint64_t bytes) { body_bytes_ += bytes; }
  HeldCounts& held_counts(uint64_t pin) { return held_[static_cast<uint32_t>(pin >> 32)]; }
  void on_wire(int delta) { on_wire_ += delta; }
  // `ex` got its answer: a redirect is followed, else its callback runs now.
  void exchange_done(std::unique_ptr<h1::Exchange> ex);
  // `ex` failed (resp.error is set): its callback runs from the loop, never inside send().
  void exchange_failed(std::unique_ptr<h1::Exchange> ex);
  // A closed connection, freed from the loop once no callback of it can be on the stack.
  void free_later(std::unique_ptr<h1::Connection> c);
  // A transfer paused on the budget.
  void paused(h1::Connection* c);
  void unpaused(h1::Connection* c);

 private:
  void start(HttpRequest req, Done done) override;
  bool has_room() const override;
  void submit(std::unique_ptr<h1::Exchange> ex);
  bool follow(std::unique_ptr<h1::Exchange>& ex);
  void hand_to_fallback(std::unique_ptr<h1::Exchange> ex, uint64_t now);
  void finish(std::unique_ptr<h1::Exchange> ex);
  void release(h1::Exchange& ex);
  void deliver();
  void schedule_rebalance();
  void rebalance();
  void close_idle();

  uv_loop_t* loop_;
  ClientOptions opts_;
  HttpClient& fallback_;
  BodyBudget& budget_;
  bool use_proxy_;  // http_proxy is set: every request goes to curl, which honours it
  std::unordered_map<std::string, std::unique_ptr<h1::Origin>> origins_;
  std::vector<std::unique_ptr<h1::Exchange>> finished_;  // callbacks to run from the loop
  std::vector<h1::Connection*> paused_;
  std::vector<std::unique_ptr<h1::Connection>> dead_;
  uv::Timer deliver_timer_;
  uv::Timer rebalance_timer_;
  uv::Timer reap_timer_;
  uv::Timer idle_timer_;
  bool rebalance_pending_ = false;
  size_t started_ = 0;  // made and handed to an origin, not yet finished
  size_t on_wire_ = 0;  // exchanges on a connection
  uint64_t completed_ = 0;
  uint64_t body_bytes_ = 0;
  OriginErrorTable errors_;
  std::unordered_map<uint32_t, HeldCounts> held_;  // by pin group
};

}  // namespace corral::worker
