#include "worker/ws/url.h"

#include <strings.h>

namespace corral::worker::ws {

std::optional<HttpUrl> parse_ws_url(const std::string& url) {
  if (strncasecmp(url.c_str(), "ws://", 5) == 0) return parse_http_url("http" + url.substr(2));
  if (strncasecmp(url.c_str(), "wss://", 6) == 0) return parse_http_url("https" + url.substr(3));
  return std::nullopt;
}

}  // namespace corral::worker::ws
