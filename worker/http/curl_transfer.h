// One transfer of CurlClient: its easy handle's settings, the body and header callbacks, and
// what a redirect changes in the request. Internal to worker/http.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <string>

#include "shared/status.h"
#include "worker/http/curl_client.h"

namespace corral::worker {

struct CurlClient::Transfer {
  CurlClient* client = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  HttpRequest req;
  HttpResponse resp;
  Done done;
  uint64_t max_body = 0;
  uint64_t deadline_ms = 0;  // uv_now() by which every hop must be done
  bool too_large = false;
  bool retried = false;  // sent again once after a stale connection
  bool paused = false;         // by the memory budget
  uint64_t waiting_bytes = 0;  // what curl offered when it was paused

  // The body grew by `bytes`: false when the client's memory budget says to pause instead.
  bool take_budget(size_t bytes) { return client->take_budget(this, bytes); }
  // Sets every option of `easy` for the request as it stands (the first hop or a redirect's).
  // Fails when its TLS options cannot be used (a CA file that cannot be read, server_name).
  Status configure(uint64_t timeout_ms);
  Status configure_tls();
  // Rewrites the request for the next hop to `location` after a `status` response (see
  // curl_client.h). Fails with the reason when the hop may not be followed.
  Status redirect_to(const std::string& location, long status);
};

// curl's write and header callbacks; userp is the Transfer. They never throw.
size_t on_body(char* data, size_t size, size_t n, void* userp) noexcept;
size_t on_header(char* data, size_t size, size_t n, void* userp) noexcept;

}  // namespace corral::worker
