// What the lean client sends for a request: the bytes of an HTTP/1.1 request head, or the
// header block of an HTTP/2 request, by the same rules.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "shared/status.h"
#include "worker/http/exchange.h"

namespace corral::worker::lean {

// Appends the request line and headers of `ex` (with the blank line) to `out`. The
// scenario's headers come first in their order, "Name: value"; the client adds Host (with
// `host_header`, its origin's), Accept: */*, Accept-Encoding: gzip, deflate and Content-Length
// unless the scenario sets them. As with curl, "Name:" with no value removes a header the
// client would add.
void write_request_head(const Exchange& ex, const std::string& host_header, std::string& out);

// The header block of `ex` over HTTP/2, by the same rules: the pseudo-headers first (:method,
// :scheme, :authority from `authority` or the scenario's Host header, :path), then the
// scenario's headers with their names in lower case, then what the client adds. Headers that
// belong to an HTTP/1.1 connection (Connection, Keep-Alive, Proxy-Connection,
// Transfer-Encoding, Upgrade, and TE other than "trailers") are left out, as RFC 9113 says.
using HeaderList = std::vector<std::pair<std::string, std::string>>;
void h2_request_headers(const Exchange& ex, const std::string& authority, HeaderList& out);

// Why `ex`'s request cannot be sent as it stands (a method that is not a token, a header
// line holding a line break), or ok.
Status check_request(const Exchange& ex);

}  // namespace corral::worker::lean
