// The origin of a URL, "scheme://host:port", as per-origin settings and metrics name it.
#pragma once

#include <string>

namespace corral::http {

// "scheme://host:port" of an absolute URL: scheme and host lowercased, IPv6 in brackets, the
// port always written (80 for http, 443 for https when the URL has none). "" when `url` does
// not parse as an absolute URL with a host.
std::string origin_of(const std::string& url);

}  // namespace corral::http
