#include "worker/http/curl_transfer.h"

#include <algorithm>
#include <string_view>

#include "worker/http/redirect.h"

#include <openssl/ssl.h>
#include <strings.h>

namespace corral::worker {

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

namespace {

// curl's OpenSSL backend reads the CA bundle into every new connection's SSL_CTX unless it is
// told no file: the worker's store (read once) is put in instead.
CURLcode use_store(CURL*, void* ssl_ctx, void* store) noexcept {
  X509_STORE_up_ref(static_cast<X509_STORE*>(store));
  SSL_CTX_set_cert_store(static_cast<SSL_CTX*>(ssl_ctx), static_cast<X509_STORE*>(store));
  return CURLE_OK;
}

long curl_http_version(http::HttpVersion v, bool tls) {
  switch (v) {
    case http::HttpVersion::kAuto: return tls ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1;
    case http::HttpVersion::kHttp11: return CURL_HTTP_VERSION_1_1;
    case http::HttpVersion::kHttp2:
      return tls ? CURL_HTTP_VERSION_2_0 : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
  }
  return CURL_HTTP_VERSION_NONE;
}

}  // namespace

Status CurlClient::Transfer::configure_tls() {
  CURL* e = easy;
  const http::TlsOptions& tls = req.tls ? *req.tls : client->opts_.tls;
  if (tls.server_name) {
    return invalid_argument("tls.server_name is not supported by http_client curl (nor through "
                            "a proxy): use the lean client");
  }
  if (Status s = http::check_tls_files(tls, "tls"); !s) return s;
  auto store = client->contexts_.store(tls.ca_file);
  if (!store) return store.status();
  curl_easy_setopt(e, CURLOPT_CAINFO, nullptr);
  curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);
  curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, &use_store);
  curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, *store);
  if (!tls.verify.value_or(true)) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (tls.client_cert) {
    curl_easy_setopt(e, CURLOPT_SSLCERT, tls.client_cert->c_str());
    curl_easy_setopt(e, CURLOPT_SSLKEY, tls.client_key->c_str());
  }
  curl_easy_setopt(e, CURLOPT_SSLVERSION,
                   tls.min_version == "1.3" ? CURL_SSLVERSION_TLSv1_3 : CURL_SSLVERSION_TLSv1_2);
  return Status::ok();
}

Status CurlClient::Transfer::configure(uint64_t timeout_ms) {
  CURL* e = easy;
  curl_easy_setopt(e, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, this);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<uint64_t>(1, timeout_ms)));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_MAXAGE_CONN,  // whole seconds, at least one
                   static_cast<long>(std::max<uint64_t>(1, client->opts_.max_idle_ms / 1000)));
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
  bool tls = strncasecmp(req.url.c_str(), "https://", 8) == 0;
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, curl_http_version(req.http_version, tls));
  return tls ? configure_tls() : Status::ok();
}

Status CurlClient::Transfer::redirect_to(const std::string& location, long status) {
  Status s = redirect_request(req, resp.redirects, location, status);
  if (!s) return s;
  resp.redirects += 1;
  resp.headers.clear();
  resp.body.clear();
  return Status::ok();
}

}  // namespace corral::worker
