// What the engine asks of an HTTP client, and the clients it can be given: the lean client on
// the worker's loop (worker/http/lean_client.h) for http:// and https:// URLs over HTTP/1.1 and
// HTTP/2, which hands what it does not do (proxies) to libcurl (worker/http/curl_client.h), also
// the whole client with `http_client: curl`. The engine cannot tell them apart:
// both follow redirects by the same rules (worker/http/redirect.h), hold response bodies
// decompressed and capped, keep bodies in flight within one memory budget, and end every
// request with exactly one callback. Loop thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shared/http/tls_options.h"

namespace corral::worker {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  uint64_t timeout_ms = 30000;  // the whole exchange, every redirect included
  bool follow_redirects = true;
  int max_redirects = 10;
  uint64_t max_response_bytes = 0;  // 0: the client's default (ClientOptions::max_body_bytes)
  // Held connections (load mode). A request with a pin goes on the one connection that pin
  // owns: opened for it, never shared, not counted in max_connections_per_host, and kept open
  // after the exchange until HttpClient::unpin(). One exchange at a time per pin. The pin's
  // high 32 bits name its group, counted by HttpClient::held(). The lean client only: curl
  // (https, proxies) pools such requests as usual.
  uint64_t pin = 0;
  // The local IPv4 address a pinned connection connects from ("127.0.0.2"); empty: the
  // kernel's choice.
  std::string source;
  // Names the request for HttpClient::cancel; 0: none. Unique among requests in flight.
  uint64_t tag = 0;
  // TLS options of an https:// request, complete (the scenario's over the daemon's); nullptr:
  // the client's (ClientOptions::tls). Shared by the requests of a step.
  std::shared_ptr<const http::TlsOptions> tls;
  http::HttpVersion http_version = http::HttpVersion::kAuto;
};

struct HttpResponse {
  int status = 0;                                            // 0 on a transport error
  std::vector<std::pair<std::string, std::string>> headers;  // of the final response
  std::string body;
  std::string error;  // transport error (connect, timeout, ...); empty when a response came
  bool timed_out = false;  // the error is the request's timeout passing
  std::string url;    // the URL of the final response
  int redirects = 0;  // hops followed to get there
  double total_ms = 0;
  double tls_ms = 0;  // TLS handshakes this request waited for, included in total_ms
  bool tls_resumed = false;  // that handshake resumed a session (lean client)
  const char* protocol = "";  // "HTTP/1.1" (HTTP/1.0 too) or "HTTP/2"; "" when not known
};

// Response bodies held by every client of a worker, against one limit. A client that would
// pass it pauses the transfer instead (see each client's header).
struct BodyBudget {
  uint64_t limit = 512u << 20;
  uint64_t used = 0;
  bool fits(uint64_t bytes) const { return used + bytes <= limit; }
  void release(uint64_t bytes) { used -= std::min(used, bytes); }
};

struct ClientOptions {
  // Requests handed to the transport at once; later ones wait in a FIFO, unbuilt (see
  // send_lazy). A burst of thousands of due polls is fed in slices.
  size_t max_in_flight = 512;
  // Connections open to one origin (scheme, host, port); requests beyond wait in FIFO order.
  long max_connections_per_host = 256;
  long max_total_connections = 2048;  // curl only: across hosts, in flight
  long connection_cache = 2048;       // idle connections kept for reuse
  // A connection idle this long is closed (curl's default CURLOPT_MAXAGE_CONN); the lean
  // client also forgets an origin that has no connection left and nothing waiting.
  uint64_t max_idle_ms = 118000;
  uint64_t max_body_bytes = 64u << 20;  // a request's default max_response
  uint64_t memory_budget_bytes = 512u << 20;  // all bodies in flight, when no BodyBudget is shared
  http::TlsOptions tls;  // for requests that carry none
  // TLS handshake work per turn of the loop, at most (see Handshakes in link.h).
  uint64_t handshake_slice_ns = 3'000'000;
  // The receive window of an HTTP/2 stream; 0: 1 MiB (h2_session.cc). Tests make it small.
  int32_t h2_stream_window = 0;
  // Transfers curl starts in one turn of the loop; the rest wait for the next turn, so that a
  // burst of new https connections (each costs curl a TLS context) cannot hold the loop.
  size_t curl_starts_per_turn = 32;
};

// Connection errors to one origin, counted since the worker started.
struct OriginErrors {
  uint64_t connect = 0;  // refused, unreachable, DNS
  uint64_t reset = 0;    // closed or reset by the server before the response ended
  uint64_t timeout = 0;  // the request's deadline passed with the exchange unfinished
  uint64_t retried = 0;  // requests sent again on a fresh connection after a stale one
};

// Pinned connections of one group (see HttpRequest::pin).
struct HeldCounts {
  uint64_t open = 0;    // connected now
  uint64_t opened = 0;  // connects that succeeded, since the group's first
  uint64_t failed = 0;  // connects that failed
  uint64_t closed = 0;  // connections lost after they had connected (closed by the server,
                        // reset, timed out); the next request of that pin opens another
};

// New connections of a client, since it started.
struct TlsCounts {
  uint64_t full = 0;     // TLS handshakes in full
  uint64_t resumed = 0;  // TLS handshakes that resumed a session
  uint64_t http1 = 0;    // connections that spoke HTTP/1.1
  uint64_t http2 = 0;    // connections that spoke HTTP/2
};

class HttpClient {
 public:
  using Done = std::function<void(HttpResponse&&)>;
  // Builds a request when its transfer is about to start; nullopt drops it (no callback).
  using Make = std::function<std::optional<HttpRequest>()>;

  virtual ~HttpClient() = default;
  // Starts a transfer; `done` is called exactly once, later, from the loop (never inside
  // send()), unless the client is destroyed first. An exception thrown by `done` or `make` is
  // logged and goes no further.
  virtual void send(HttpRequest req, Done done) = 0;
  // The same, but the request is built only when a slot is free: a burst of thousands of
  // due polls waits as small entries instead of built requests, which would otherwise be
  // freed in between long-lived allocations and leave the heap fragmented.
  virtual void send_lazy(Make make, Done done) = 0;
  // Transfers started and not yet done, including those waiting for a slot.
  virtual size_t in_flight() const = 0;
  virtual uint64_t completed() const = 0;
  // Bytes of response bodies held by transfers in flight.
  virtual uint64_t body_bytes() const = 0;
  // Connection errors per origin ("http://host:port"), for /metrics.
  virtual std::vector<std::pair<std::string, OriginErrors>> origin_errors() const { return {}; }
  // Closes the connection `pin` owns, if any; a request of that pin still in flight ends as a
  // transport error.
  virtual void unpin(uint64_t /*pin*/) {}
  // The pinned connections of `group`, and forgets the group's counts when `forget` is set.
  virtual HeldCounts held(uint32_t /*group*/, bool /*forget*/ = false) { return {}; }
  // Aborts the started request tagged `tag` (HttpRequest::tag), if any: its connection is
  // closed (the server sees the client go) and its callback gets the transport error
  // "request cancelled", from the loop as always. A request still waiting for room is not
  // built yet, so has no tag: its Make decides whether it goes; nor is a pinned one (unpin
  // closes its connection). Costs a scan of the requests started, for the rare request
  // abandoned on the way (a cancelled branch or run).
  virtual void cancel(uint64_t /*tag*/) {}
  // Handshakes and protocols of the connections it opened (the lean client; zeros for curl).
  virtual TlsCounts tls_counts() const { return {}; }
};

}  // namespace corral::worker
