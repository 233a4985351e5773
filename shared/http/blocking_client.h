// A small blocking HTTP/1.1 client on libcurl's easy interface, for processes that have no event
// loop: the corral CLI and the integration tests. The master and the workers must not call it
// on their loop (it blocks the calling thread for up to timeout_ms); the master's load watcher
// calls it on libuv's thread pool.
//
// Any thread may call request(); each call uses its own easy handle. libcurl's global state is
// initialised once, on the first call.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::http {

// Where to send a request: a unix socket path, or a TCP host and port.
struct Target {
  std::string socket_path;  // non-empty: connect to this unix socket
  std::string host;         // otherwise: connect to host:port
  int port = 0;
  std::string token;  // non-empty: sent as "Authorization: Bearer <token>"

  static Target over_unix(std::string path) { return Target{std::move(path), "", 0, ""}; }
  static Target over_tcp(std::string host, int port, std::string token = "") {
    return Target{"", std::move(host), port, std::move(token)};
  }
  // "unix:/path/corral.sock" or "127.0.0.1:7070", for messages.
  std::string describe() const;
};

// A response that arrived, whatever its status code.
struct HttpResult {
  int status = 0;
  std::string body;
  // The body parsed as JSON, or null when it is empty or not JSON.
  nlohmann::json json() const;
};

// Sends `method path` to `target` and waits for the whole response, at most timeout_ms (which
// covers connecting too). A non-empty `body_json` is sent with Content-Type: application/json;
// POST, PUT and PATCH always send a body (possibly empty, with Content-Length: 0).
// Errors: Code::kUnavailable when nothing accepts the connection (no socket file, connection
// refused, unknown host); Code::kTimeout when the deadline passes; Code::kIo for anything else
// that went wrong on the wire (the message names libcurl's error). An HTTP error status (4xx,
// 5xx) is not an error here: it comes back as an HttpResult.
Result<HttpResult> request(const Target& target, std::string_view method, std::string_view path,
                           std::string_view body_json = {}, long timeout_ms = 5000);

// A request to a whole URL, for the master's webhooks.
struct UrlRequest {
  std::string method = "POST";
  std::string url;                   // http:// or https://
  std::vector<std::string> headers;  // "Name: value" lines, sent as given
  std::string body_json;             // POST, PUT and PATCH send it (possibly empty)
  long timeout_ms = 5000;            // the whole exchange, connecting included
  // When set, the transfer is abandoned soon after it turns true (within about a second:
  // libcurl's progress callback), failing with Code::kIo.
  const std::atomic<bool>* abort = nullptr;
};

// Sends `r` as request() does, with the same errors. Unlike request(), it follows the proxy
// variables of the environment (https_proxy, no_proxy, ...), as a webhook to the outside must;
// its error messages are libcurl's alone ("Couldn't connect to server"), naming no URL: a
// webhook's URL may hold a token, and the caller names it.
Result<HttpResult> request_url(const UrlRequest& r);

}  // namespace corral::http
