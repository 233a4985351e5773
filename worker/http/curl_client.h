// An HTTP client on libcurl's multi interface, driven by the worker's libuv loop: curl's
// sockets are watched with uv_poll, its timeout with one uv_timer. Connections are pooled per
// host by curl's connection cache; only transfers in flight hold an easy handle, so a scenario
// that is waiting between polls costs nothing here. Loop thread only.
//
// Redirects are followed here, not by curl, by the rules of worker/http/redirect.h. The
// timeout covers every hop.
//
// TLS: every new connection gets a CA store read once per worker (tls_context.h) instead of
// curl's reading of the CA bundle, which costs about 45 ms a connection with OpenSSL 3; and at
// most ClientOptions::curl_starts_per_turn transfers start per turn of the loop, so that a
// burst of new https connections is spread over turns with the loop's timers served between
// them. A request's TLS options map to curl's, but tls.server_name, which curl cannot set
// apart from the URL's host: such a request fails, naming it.
//
// Response bodies are held in memory, decompressed. Each is capped (a larger one is a
// transport error naming the limit), and together the bodies in flight stay within the
// client's memory budget: past it, transfers pause and new ones wait, and if every transfer
// is paused the largest fails, so the budget is never exceeded and the client never stalls.
#pragma once

#include <curl/curl.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "shared/uv/timer.h"
#include "worker/http/client.h"
#include "worker/http/origin_errors.h"
#include "worker/http/queued_client.h"
#include "worker/http/tls_context.h"

namespace corral::worker {

class CurlClient final : public QueuedClient {
 public:
  // `budget`, when given, is shared with the worker's other client and must outlive this one;
  // otherwise the client keeps its own, of opts.memory_budget_bytes.
  CurlClient(uv_loop_t* loop, ClientOptions opts = {}, BodyBudget* budget = nullptr);
  // Transfers still in flight are dropped without calling their callbacks.
  ~CurlClient() override;
  CurlClient(const CurlClient&) = delete;
  CurlClient& operator=(const CurlClient&) = delete;

  uint64_t completed() const override { return completed_; }
  uint64_t body_bytes() const override { return body_bytes_; }
  std::vector<std::pair<std::string, OriginErrors>> origin_errors() const override;
  void cancel(uint64_t tag) override;

 public:
  struct Transfer;  // public to the file's C callbacks
  struct SocketWatch;

 private:
  friend struct Transfer;
  static int on_socket(CURL* easy, curl_socket_t s, int what, void* userp, void* socketp) noexcept;
  static int on_timer(CURLM* multi, long timeout_ms, void* userp) noexcept;
  static void on_poll(uv_poll_t* handle, int status, int events);
  void socket_action(curl_socket_t s, int flags);
  void collect_done();
  void on_transfer_done(Transfer* t, CURLcode result);
  bool follow_redirect(Transfer* t, long status);
  bool retry_on_fresh_connection(Transfer* t, CURLcode result, long status);
  void finish(Transfer* t);
  void begin(Transfer* t);
  void add(Transfer* t);
  void fail_soon(Transfer* t, std::string error);
  void start(HttpRequest req, Done done) override;
  bool has_room() const override;
  CURL* take_easy();
  // Memory budget: a transfer's body grew by `bytes`; false means pause it.
  bool take_budget(Transfer* t, size_t bytes);
  // Gives a body's bytes back to the budget and drops them.
  void release_body(Transfer* t);
  void schedule_rebalance();
  void rebalance();
  void count_error(const std::string& url, int result);
  void note_connection(Transfer* t);

  uv_loop_t* loop_;
  ClientOptions opts_;
  BodyBudget own_budget_;
  BodyBudget* budget_;
  CURLM* multi_;
  std::string unusable_;  // why libcurl cannot be used, when it cannot: each request fails so
  uv::Timer timer_;
  uv::Timer failed_timer_;     // delivers transfers that ended outside curl
  uv::Timer rebalance_timer_;  // resumes paused transfers, or fails one when all are paused
  std::vector<Transfer*> failed_;
  size_t in_curl_ = 0;
  size_t started_this_turn_ = 0;
  uv::Timer turn_timer_;  // the next turn's starts
  tls::Contexts contexts_;
  std::unordered_set<Transfer*> live_;
  std::vector<Transfer*> paused_;
  std::vector<CURL*> idle_easy_;
  uint64_t completed_ = 0;
  uint64_t body_bytes_ = 0;
  bool rebalance_pending_ = false;
  OriginErrorTable errors_;
};

}  // namespace corral::worker
