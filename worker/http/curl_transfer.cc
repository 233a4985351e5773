#include "worker/http/curl_transfer.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "config/scenario/response.h"

namespace corral::worker {
namespace {

using scenario::equals_ignoring_case;

std::string_view header_name(std::string_view line) {
  return line.substr(0, std::min(line.find(':'), line.size()));
}

// The scheme, host and port of `url`, lowercased by curl; empty when it does not parse.
std::string origin_of(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), &curl_url_cleanup);
  if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return "";
  std::string out;
  for (CURLUPart part : {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT}) {
    char* text = nullptr;
    CURLUcode rc =
        curl_url_get(u.get(), part, &text, part == CURLUPART_PORT ? CURLU_DEFAULT_PORT : 0);
    if (rc == CURLUE_OK && text != nullptr) out += text;
    out += '|';
    curl_free(text);
  }
  return out;
}

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         equals_ignoring_case(text.substr(0, prefix.size()), prefix);
}

}  // namespace

size_t on_body(char* data, size_t size, size_t n, void* userp) noexcept {
  auto* t = static_cast<CurlClient::Transfer*>(userp);
  size_t bytes = size * n;
  if (t->resp.body.size() + bytes > t->max_body) {
    t->too_large = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  if (!t->take_budget(bytes)) return CURL_WRITEFUNC_PAUSE;  // curl keeps the bytes
  try {
    t->resp.body.append(data, bytes);
  } catch (...) {
    return 0;  // out of memory: this transfer fails, the worker goes on
  }
  return bytes;
}

size_t on_header(char* data, size_t size, size_t n, void* userp) noexcept {
  auto* t = static_cast<CurlClient::Transfer*>(userp);
  size_t bytes = size * n;
  std::string_view line(data, bytes);
  if (line.rfind("HTTP/", 0) == 0) {
    t->resp.headers.clear();  // a new response (after 100 Continue)
    return bytes;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return bytes;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) {
      s.remove_suffix(1);
    }
    return s;
  };
  try {
    t->resp.headers.emplace_back(std::string(line.substr(0, colon)),
                                 std::string(trim(line.substr(colon + 1))));
  } catch (...) {
    return 0;
  }
  return bytes;
}

void CurlClient::Transfer::configure(uint64_t timeout_ms) {
  CURL* e = easy;
  curl_easy_setopt(e, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, this);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<uint64_t>(1, timeout_ms)));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  // A Content-Length over the cap fails at once; bodies without one are cut by on_body.
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_body));
  if (req.method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (req.method != "GET" || !req.body.empty()) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  }
  curl_slist_free_all(headers);
  headers = nullptr;
  for (const auto& h : req.headers) headers = curl_slist_append(headers, h.c_str());
  // curl adds "Expect: 100-continue" to large bodies, which costs a round trip: turn it off.
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
}

Status CurlClient::Transfer::redirect_to(const std::string& location, long status) {
  if (resp.redirects >= req.max_redirects) {
    return Status(Code::kUnavailable, "too many redirects (" + std::to_string(resp.redirects) +
                                          " followed, max_redirects is " +
                                          std::to_string(req.max_redirects) + ")");
  }
  if (!starts_with_ignoring_case(location, "http://") &&
      !starts_with_ignoring_case(location, "https://")) {
    return Status(Code::kUnavailable, "redirect to a URL that is not http or https: " + location);
  }
  bool to_get = (status == 303 && req.method != "HEAD") ||
                ((status == 301 || status == 302) && req.method == "POST");
  std::string from = origin_of(req.url);
  bool cross_origin = from.empty() || from != origin_of(location);
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
  resp.redirects += 1;
  resp.headers.clear();
  resp.body.clear();
  return Status::ok();
}

}  // namespace corral::worker
