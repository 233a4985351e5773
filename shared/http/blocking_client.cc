#include "shared/http/blocking_client.h"

#include <memory>
#include <mutex>
#include <vector>

#include <curl/curl.h>

namespace corral::http {
namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

Status status_for(CURLcode rc, const std::string& what) {
  std::string message = (what.empty() ? "" : what + ": ") + curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
      return {Code::kUnavailable, std::move(message)};
    case CURLE_OPERATION_TIMEDOUT:
      return {Code::kTimeout, std::move(message)};
    default:
      return {Code::kIo, std::move(message)};
  }
}

// libcurl's progress callback: a non-zero answer abandons the transfer.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* abort = static_cast<const std::atomic<bool>*>(user);
  return abort->load() ? 1 : 0;
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// Sends `r`, over the unix socket `socket_path` when it is not empty (r.url's host is then
// ignored); `what`, when not empty, begins the error messages. `proxies`: whether the environment's
// proxy variables apply.
Result<HttpResult> perform(const UrlRequest& r, const std::string& socket_path,
                           const std::string& what, bool proxies) {
  init_curl_once();
  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  if (!easy) return Status(Code::kInternal, "curl_easy_init() failed");
  CURL* c = easy.get();
  HttpResult result;

  if (!socket_path.empty()) curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket_path.c_str());
  curl_easy_setopt(c, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  // The daemon's own API is local: an http_proxy variable must not reroute it.
  if (!proxies) curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r.timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, r.timeout_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &result.body);
  if (r.abort != nullptr) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, r.abort);
  }

  std::vector<std::string> lines = r.headers;
  const bool sends_body =
      !r.body_json.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH";
  if (!sends_body) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (r.method != "GET") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  } else {
    // POSTFIELDS with an explicit size also sends an empty body with Content-Length: 0.
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, r.body_json.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(r.body_json.size()));
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    lines.push_back("Content-Type: application/json");
    // Without "Expect:", curl waits up to a second for "100 Continue" on larger bodies.
    lines.push_back("Expect:");
  }
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  for (const std::string& line : lines) {
    curl_slist* list = curl_slist_append(headers.get(), line.c_str());
    if (list == nullptr) return Status(Code::kInternal, "curl_slist_append() failed");
    headers.release();
    headers.reset(list);
  }
  if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());

  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) return status_for(rc, what);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  result.status = static_cast<int>(code);
  return result;
}

}  // namespace

std::string Target::describe() const {
  if (!socket_path.empty()) return "unix:" + socket_path;
  return host + ":" + std::to_string(port);
}

nlohmann::json HttpResult::json() const {
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? nlohmann::json() : parsed;
}

Result<HttpResult> request(const Target& target, std::string_view method, std::string_view path,
                           std::string_view body_json, long timeout_ms) {
  UrlRequest r;
  r.method = std::string(method);
  r.url = target.socket_path.empty() ? "http://" + target.host + ":" + std::to_string(target.port)
                                     : "http://localhost";
  r.url.append(path);
  if (!target.token.empty()) r.headers.push_back("Authorization: Bearer " + target.token);
  r.body_json = std::string(body_json);
  r.timeout_ms = timeout_ms;
  return perform(r, target.socket_path,
                 r.method + " " + std::string(path) + " on " + target.describe(), false);
}

Result<HttpResult> request_url(const UrlRequest& r) { return perform(r, "", "", true); }

}  // namespace corral::http
