// URLs as the lean HTTP/1.1 client needs them, split by http-parser's URL parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace corral::worker {

// Parsed for every request, so it holds only what differs per request; what is the same for
// every request to an origin (its label, the Host header) is derived once per pool.
struct HttpUrl {
  std::string host;    // as written, without brackets for IPv6
  uint16_t port = 80;
  std::string target;  // path and query, "/" when the URL has no path; never the fragment

  // "host:port", lowercased, IPv6 in brackets: the key of a connection pool.
  std::string pool_key() const;
  // "http://host:port", lowercased: the origin's label in metrics.
  std::string origin() const { return "http://" + pool_key(); }
  // The Host header's value: the host as written, and the port if it is not 80.
  std::string host_header() const;
};

// Splits an absolute http:// URL. nullopt when it is not one (https, another scheme, user
// info, a relative URL) or holds bytes no URL may hold (space, control characters).
std::optional<HttpUrl> parse_http_url(const std::string& url);

// "scheme://host:port" of any absolute URL, lowercased; "" when it does not parse. For
// labelling metrics per origin.
std::string origin_label(const std::string& url);

}  // namespace corral::worker
