// ws:// and wss:// URLs: the same parts as http:// and https:// ones (RFC 6455, 3).
#pragma once

#include <optional>
#include <string>

#include "worker/http/url.h"

namespace corral::worker::ws {

// Splits an absolute ws:// or wss:// URL (wss: `tls` set, port 443 by default); nullopt when
// it is not one.
std::optional<HttpUrl> parse_ws_url(const std::string& url);

}  // namespace corral::worker::ws
