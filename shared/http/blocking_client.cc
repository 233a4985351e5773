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
  std::string message = what + ": " + curl_easy_strerror(rc);
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

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

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
  init_curl_once();
  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  if (!easy) return Status(Code::kInternal, "curl_easy_init() failed");
  CURL* c = easy.get();

  std::string url;
  if (!target.socket_path.empty()) {
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, target.socket_path.c_str());
    url = "http://localhost";
  } else {
    url = "http://" + target.host + ":" + std::to_string(target.port);
  }
  url.append(path);
  const std::string method_str(method);
  const std::string body(body_json);
  HttpResult result;

  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");  // an http_proxy variable must not reroute us
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &result.body);

  std::vector<std::string> lines;
  if (!target.token.empty()) lines.push_back("Authorization: Bearer " + target.token);
  const bool sends_body =
      !body.empty() || method_str == "POST" || method_str == "PUT" || method_str == "PATCH";
  if (!sends_body) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (method_str != "GET") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method_str.c_str());
  } else {
    // POSTFIELDS with an explicit size also sends an empty body with Content-Length: 0.
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method_str.c_str());
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
  if (rc != CURLE_OK) {
    return status_for(rc, method_str + " " + std::string(path) + " on " + target.describe());
  }
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  result.status = static_cast<int>(code);
  return result;
}

}  // namespace corral::http
