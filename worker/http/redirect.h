// The redirect rules both HTTP clients follow, the ones users know from fetch and k6: at most
// max_redirects hops, to http and https only; 303 (and 301/302 after a POST) becomes a GET
// without a body; 307/308 keep method and body; Authorization, Cookie and
// Proxy-Authorization are dropped when the origin (scheme, host, port) changes.
#pragma once

#include <string>

#include "shared/status.h"
#include "worker/http/client.h"

namespace corral::worker {

bool is_redirect(long status);

// GET, HEAD, PUT, DELETE, OPTIONS and TRACE: safe to send again after a stale connection.
bool is_idempotent(const std::string& method);

// `location` (a Location header, absolute or relative) made absolute against `base`, as a
// browser would; empty when it cannot be resolved.
std::string resolve_location(const std::string& base, const std::string& location);

// Rewrites `req` for the hop to the absolute URL `location` after a `status` response, when
// `followed` hops were taken already. Fails with the reason when the hop may not be taken.
Status redirect_request(HttpRequest& req, int followed, const std::string& location,
                        long status);

}  // namespace corral::worker
