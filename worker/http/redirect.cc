#include "worker/http/redirect.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <string_view>

#include "config/scenario/response.h"
#include "worker/http/url.h"

namespace corral::worker {
namespace {

using scenario::equals_ignoring_case;
using Url = std::unique_ptr<CURLU, decltype(&curl_url_cleanup)>;

std::string_view header_name(std::string_view line) {
  return line.substr(0, std::min(line.find(':'), line.size()));
}

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         equals_ignoring_case(text.substr(0, prefix.size()), prefix);
}

}  // namespace

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool is_idempotent(const std::string& m) {
  return m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS" ||
         m == "TRACE";
}

std::string resolve_location(const std::string& base, const std::string& location) {
  Url u(curl_url(), &curl_url_cleanup);
  if (!u || curl_url_set(u.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK) return "";
  // With a base already set, curl resolves a relative URL against it.
  unsigned flags = CURLU_NON_SUPPORT_SCHEME;
  if (curl_url_set(u.get(), CURLUPART_URL, location.c_str(), flags) != CURLUE_OK) return "";
  char* text = nullptr;
  if (curl_url_get(u.get(), CURLUPART_URL, &text, 0) != CURLUE_OK || text == nullptr) return "";
  std::string out(text);
  curl_free(text);
  return out;
}

Status redirect_request(HttpRequest& req, int followed, const std::string& location,
                        long status) {
  if (followed >= req.max_redirects) {
    return Status(Code::kUnavailable, "too many redirects (" + std::to_string(followed) +
                                          " followed, max_redirects is " +
                                          std::to_string(req.max_redirects) + ")");
  }
  if (!starts_with_ignoring_case(location, "http://") &&
      !starts_with_ignoring_case(location, "https://")) {
    return Status(Code::kUnavailable, "redirect to a URL that is not http or https: " + location);
  }
  bool to_get = (status == 303 && req.method != "HEAD") ||
                ((status == 301 || status == 302) && req.method == "POST");
  std::string from = origin_label(req.url);
  bool cross_origin = from.empty() || from != origin_label(location);
  std::vector<std::string> kept;
  for (const auto& h : req.headers) {
    std::string_view name = header_name(h);
    bool body_header = equals_ignoring_case(name, "Content-Type") ||
                       equals_ignoring_case(name, "Content-Length") ||
                       equals_ignoring_case(name, "Content-Encoding");
    bool credential = equals_ignoring_case(name, "Authorization") ||
                      equals_ignoring_case(name, "Cookie") ||
                      equals_ignoring_case(name, "Proxy-Authorization");
    if ((to_get && body_header) || (cross_origin && credential)) continue;
    kept.push_back(h);
  }
  req.headers = std::move(kept);
  if (to_get) {
    req.method = "GET";
    req.body.clear();
  }
  req.url = location;
  return Status::ok();
}

}  // namespace corral::worker
