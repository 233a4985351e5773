// URLs as the lean client needs them, split by http-parser's URL parser.
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace corral::worker {

// Parsed for every request, so it holds only what differs per request; what is the same for
// every request to an origin (its label, the Host header) is derived once per pool.
struct HttpUrl {
  bool tls = false;    // https
  std::string host;    // as written, without brackets for IPv6
  uint16_t port = 80;  // the URL's, else 80 for http and 443 for https
  std::string target;  // path and query, "/" when the URL has no path; never the fragment

  // "host:port", lowercased, IPv6 in brackets: the key of a connection pool.
  std::string pool_key() const;
  // "http://host:port" or "https://host:port", lowercased: the origin's label in metrics.
  std::string origin() const { return (tls ? "https://" : "http://") + pool_key(); }
  // The Host header's value (and HTTP/2's :authority): the host as written, and the port if it
  // is not the scheme's own.
  std::string host_header() const;
};

// Splits an absolute http:// or https:// URL. nullopt when it is not one (another scheme, user
// info, a relative URL) or holds bytes no URL may hold (space, control characters).
std::optional<HttpUrl> parse_http_url(const std::string& url);

// Whether `host` is an IPv4 or IPv6 literal; if so, `out` gets it with `port`.
bool literal_address(const std::string& host, uint16_t port, sockaddr_storage& out);
// The addresses of a uv_getaddrinfo answer, in its order; `res` is freed.
std::vector<sockaddr_storage> take_addresses(addrinfo* res);

// "scheme://host:port" of any absolute URL, lowercased; "" when it does not parse. For
// labelling metrics per origin.
std::string origin_label(const std::string& url);

}  // namespace corral::worker
