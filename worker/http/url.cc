#include "worker/http/url.h"

#include <http_parser.h>
#include <uv.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>

#include "shared/http/origin.h"

namespace corral::worker {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view field(const std::string& url, const http_parser_url& u, int f) {
  if (!(u.field_set & (1 << f))) return {};
  return std::string_view(url).substr(u.field_data[f].off, u.field_data[f].len);
}

// An IPv6 address in brackets, as URLs and Host headers write it.
std::string bracketed(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

bool parse(const std::string& url, http_parser_url& u) {
  for (unsigned char c : url) {
    if (c <= 0x20 || c == 0x7f) return false;
  }
  http_parser_url_init(&u);
  return http_parser_parse_url(url.data(), url.size(), 0, &u) == 0 &&
         (u.field_set & (1 << UF_SCHEMA)) && (u.field_set & (1 << UF_HOST));
}

}  // namespace

std::optional<HttpUrl> parse_http_url(const std::string& url) {
  http_parser_url u;
  if (!parse(url, u)) return std::nullopt;
  std::string scheme = lower(field(url, u, UF_SCHEMA));
  if (scheme != "http" && scheme != "https") return std::nullopt;
  if (u.field_set & (1 << UF_USERINFO)) return std::nullopt;  // curl sends it as Basic auth
  HttpUrl out;
  out.tls = scheme == "https";
  out.port = out.tls ? 443 : 80;
  out.host = std::string(field(url, u, UF_HOST));
  if (out.host.empty()) return std::nullopt;
  if (u.field_set & (1 << UF_PORT)) {
    if (u.port == 0) return std::nullopt;
    out.port = u.port;
  }
  std::string_view path = field(url, u, UF_PATH);
  out.target = path.empty() ? "/" : std::string(path);
  if (u.field_set & (1 << UF_QUERY)) {
    out.target += '?';
    out.target += field(url, u, UF_QUERY);
  }
  return out;
}

std::string HttpUrl::pool_key() const {
  std::string key = lower(bracketed(host));
  key += ':';
  key += std::to_string(port);
  return key;
}

std::string HttpUrl::host_header() const {
  return port == (tls ? 443 : 80) ? bracketed(host) : bracketed(host) + ":" + std::to_string(port);
}

std::string origin_label(const std::string& url) { return http::origin_of(url); }

bool literal_address(const std::string& host, uint16_t port, sockaddr_storage& out) {
  std::memset(&out, 0, sizeof out);
  if (uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(&out)) == 0) return true;
  return uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6*>(&out)) == 0;
}

std::vector<sockaddr_storage> take_addresses(addrinfo* res) {
  std::vector<sockaddr_storage> addrs;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    sockaddr_storage s{};
    std::memcpy(&s, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof s));
    addrs.push_back(s);
  }
  uv_freeaddrinfo(res);
  return addrs;
}

}  // namespace corral::worker
