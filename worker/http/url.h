// URLs as the lean HTTP/1.1 client needs them, split by http-parser's URL parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace corral::worker {

struct HttpUrl {
  std::string host;    // as written, without brackets for IPv6
  uint16_t port = 80;
  std::string target;  // path and query, "/" when the URL has no path; never the fragment
  std::string origin;  // "http://host:port", lowercased: the key of a connection pool
  std::string host_header;  // the Host header's value: host, and the port if not the default
};

// Splits an absolute http:// URL. nullopt when it is not one (https, another scheme, user
// info, a relative URL) or holds bytes no URL may hold (space, control characters).
std::optional<HttpUrl> parse_http_url(const std::string& url);

// "scheme://host:port" of any absolute URL, lowercased; "" when it does not parse. For
// labelling metrics per origin.
std::string origin_label(const std::string& url);

}  // namespace corral::worker
