// An HTTP client on libcurl's multi interface, driven by the worker's libuv loop: curl's
// sockets are watched with uv_poll, its timeout with one uv_timer. Connections are pooled per
// host by curl's connection cache; only transfers in flight hold an easy handle, so a scenario
// that is waiting between polls costs nothing here. Loop thread only.
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
  uint64_t timeout_ms = 30000;
};

struct HttpResponse {
  int status = 0;                                            // 0 on a transport error
  std::vector<std::pair<std::string, std::string>> headers;  // of the final response
  std::string body;
  std::string error;  // transport error (connect, timeout, ...); empty when a response came
  double total_ms = 0;
};

struct CurlOptions {
  // Transfers handed to curl at once; later ones wait in a FIFO here. curl's multi handle
  // slows down as it holds more transfers and connections, so a burst of thousands of due
  // polls is fed to it a slice at a time.
  size_t max_in_flight = 512;
  long max_host_connections = 256;    // parallel connections to one host
  long max_total_connections = 2048;  // across hosts, in flight
  long connection_cache = 2048;       // idle connections kept for reuse
  size_t max_body_bytes = 8u << 20;   // a larger response body is a transport error
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
  // send()), unless the client is destroyed first.
  void send(HttpRequest req, Done done);
  // The same, but the request is built only when a slot is free: a burst of thousands of
  // due polls waits here as small entries instead of built requests, which would otherwise
  // be freed in between long-lived allocations and leave the heap fragmented.
  void send_lazy(Make make, Done done);
  // Transfers started and not yet done, including those waiting for a slot.
  size_t in_flight() const { return in_flight_; }
  size_t max_body_bytes() const { return opts_.max_body_bytes; }
  uint64_t completed() const { return completed_; }

 public:
  struct Transfer;  // public to the file's C callbacks
  struct SocketWatch;

 private:
  static int on_socket(CURL* easy, curl_socket_t s, int what, void* userp, void* socketp);
  static int on_timer(CURLM* multi, long timeout_ms, void* userp);
  static void on_poll(uv_poll_t* handle, int status, int events);
  void socket_action(curl_socket_t s, int flags);
  void collect_done();
  void finish(Transfer* t);
  void begin(Transfer* t);
  void start_made(Make make, Done done);
  CURL* take_easy();

  uv_loop_t* loop_;
  CurlOptions opts_;
  CURLM* multi_;
  uv::Timer timer_;
  uv::Timer failed_timer_;  // delivers transfers curl refused to start
  std::vector<Transfer*> failed_;
  struct Waiting {
    Make make;
    Done done;
  };
  std::deque<Waiting> waiting_;  // over max_in_flight, not yet built or handed to curl
  size_t in_curl_ = 0;
  std::unordered_set<Transfer*> live_;
  std::vector<CURL*> idle_easy_;
  size_t in_flight_ = 0;
  uint64_t completed_ = 0;
};

}  // namespace corral::worker
