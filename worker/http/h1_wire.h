// The bytes of an HTTP/1.1 request head, as the lean client sends them.
#pragma once

#include <string>

#include "shared/status.h"

namespace corral::worker::h1 {

struct Exchange;

// Appends the request line and headers of `ex` (with the blank line) to `out`. The
// scenario's headers come first in their order, "Name: value"; the client adds Host (with
// `host_header`, its origin's),
// Accept: */*, Accept-Encoding: gzip, deflate and Content-Length unless the scenario sets
// them. As with curl, "Name:" with no value removes a header the client would add.
void write_request_head(const Exchange& ex, const std::string& host_header, std::string& out);

// Why `ex`'s request cannot be sent as it stands (a method that is not a token, a header
// line holding a line break), or ok.
Status check_request(const Exchange& ex);

}  // namespace corral::worker::h1
