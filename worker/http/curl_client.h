// An HTTP client on libcurl's multi interface, driven by the worker's libuv loop: curl's
// sockets are watched with uv_poll, its timeout with one uv_timer. Connections are pooled per
// host by curl's connection cache; only transfers in flight hold an easy handle, so a scenario
// that is waiting between polls costs nothing here. Loop thread only.
//
// Redirects (301, 302, 303, 307, 308) are followed here, not by curl, so that the rules are
// the ones users know from fetch and k6: at most max_redirects hops, http and https only, 303
// (and 301/302 after a POST) becomes a GET without a body, 307/308 keep method and body, and
// Authorization, Cookie and Proxy-Authorization are dropped when the origin changes. The
// timeout covers every hop.
//
// Response bodies are held in memory, decompressed. Each is capped (a larger one is a
// transport error naming the limit), and together the bodies in flight stay within the
// client's memory budget: past it, transfers pause and new ones wait, and if every transfer
// is paused the largest fails, so the budget is never exceeded and the client never stalls.
#pragma once

#include <curl/curl.h>
#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "shared/uv/timer.h"

namespace corral::worker {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  uint64_t timeout_ms = 30000;  // the whole exchange, every redirect included
  bool follow_redirects = true;
  int max_redirects = 10;
  uint64_t max_response_bytes = 0;  // 0: the client's default (CurlOptions::max_body_bytes)
};

struct HttpResponse {
  int status = 0;                                            // 0 on a transport error
  std::vector<std::pair<std::string, std::string>> headers;  // of the final response
  std::string body;
  std::string error;  // transport error (connect, timeout, ...); empty when a response came
  std::string url;    // the URL of the final response
  int redirects = 0;  // hops followed to get there
  double total_ms = 0;
};

struct CurlOptions {
  // Transfers handed to curl at once; later ones wait in a FIFO here. curl's multi handle
  // slows down as it holds more transfers and connections, so a burst of thousands of due
  // polls is fed to it a slice at a time.
  size_t max_in_flight = 512;
  long max_host_connections = 256;            // parallel connections to one host
  long max_total_connections = 2048;          // across hosts, in flight
  long connection_cache = 2048;               // idle connections kept for reuse
  uint64_t max_body_bytes = 64u << 20;        // a request's default max_response
  uint64_t memory_budget_bytes = 512u << 20;  // all bodies in flight together
};

class CurlClient {
 public:
  using Done = std::function<void(HttpResponse&&)>;
  // Builds a request when its transfer is about to start; nullopt drops it (no callback).
  using Make = std::function<std::optional<HttpRequest>()>;

  CurlClient(uv_loop_t* loop, CurlOptions opts = {});
  // Transfers still in flight are dropped without calling their callbacks.
  ~CurlClient();
  CurlClient(const CurlClient&) = delete;
  CurlClient& operator=(const CurlClient&) = delete;

  // Starts a transfer; `done` is called exactly once, later, from the loop (never inside
  // send()), unless the client is destroyed first. An exception thrown by `done` or `make` is
  // logged and goes no further.
  void send(HttpRequest req, Done done);
  // The same, but the request is built only when a slot is free: a burst of thousands of
  // due polls waits here as small entries instead of built requests, which would otherwise
  // be freed in between long-lived allocations and leave the heap fragmented.
  void send_lazy(Make make, Done done);
  // Transfers started and not yet done, including those waiting for a slot.
  size_t in_flight() const { return in_flight_; }
  uint64_t completed() const { return completed_; }
  // Bytes of response bodies held by transfers in flight.
  uint64_t body_bytes() const { return body_bytes_; }
  const CurlOptions& options() const { return opts_; }

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
  void finish(Transfer* t);
  void begin(Transfer* t);
  void add(Transfer* t);
  void fail_soon(Transfer* t, std::string error);
  void start_made(Make make, Done done);
  void start_waiting();
  bool has_room() const;
  CURL* take_easy();
  // Memory budget: a transfer's body grew by `bytes`; false means pause it.
  bool take_budget(Transfer* t, size_t bytes);
  // Gives a body's bytes back to the budget and drops them.
  void release_body(Transfer* t);
  void schedule_rebalance();
  void rebalance();

  uv_loop_t* loop_;
  CurlOptions opts_;
  CURLM* multi_;
  uv::Timer timer_;
  uv::Timer failed_timer_;     // delivers transfers that ended outside curl
  uv::Timer rebalance_timer_;  // resumes paused transfers, or fails one when all are paused
  std::vector<Transfer*> failed_;
  struct Waiting {
    Make make;
    Done done;
  };
  std::deque<Waiting> waiting_;  // over max_in_flight or the budget, not yet handed to curl
  size_t in_curl_ = 0;
  std::unordered_set<Transfer*> live_;
  std::vector<Transfer*> paused_;
  std::vector<CURL*> idle_easy_;
  size_t in_flight_ = 0;
  uint64_t completed_ = 0;
  uint64_t body_bytes_ = 0;
  bool rebalance_pending_ = false;
};

}  // namespace corral::worker
