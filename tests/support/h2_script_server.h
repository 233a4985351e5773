// HTTP/2 for the scripted raw server (raw_http_server.h): the same scripts, played on streams.
// nghttp2's server session does the framing, HPACK and flow control, over TLS with ALPN "h2"
// or over plain TCP (h2c by prior knowledge).
//
// Each request stream, once the client ended it, becomes a RawRequest (target = :path, bytes =
// the request rendered as HTTP/1.1, with a "host" line for :authority) and gets its script from
// the server's ScriptFor. Scripts stay HTTP/1.1 response bytes: http-parser reads them as they
// play, and what it finds goes out as HTTP/2 (h2_answer.h):
// - status and headers: a HEADERS frame (names lower-cased; Connection, Keep-Alive,
//   Proxy-Connection, Transfer-Encoding and Upgrade dropped); a 1xx: an informational HEADERS;
// - the body, de-chunked, as DATA as it comes (a deferred data provider), END_STREAM when the
//   message is complete (a close-delimited body ends at the script's close); trailers as a
//   trailing HEADERS;
// - a message the script never completes leaves the stream open (a server that hangs);
// - "Connection: close" (or an HTTP/1.0 answer) and close_connection(): GOAWAY (NO_ERROR), then
//   FIN once the stream's answer is out; reset_connection(): RST; reset_stream(code):
//   RST_STREAM with that code; raw(): bytes to the socket as they are.
// received() holds the connection's plain bytes: HTTP/2 frames. Loop thread only.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "tests/support/raw_http_server.h"

namespace corral::test {

struct H2ServerOptions {
  uint32_t max_concurrent_streams = 100;  // SETTINGS_MAX_CONCURRENT_STREAMS
  // SETTINGS_INITIAL_WINDOW_SIZE: how much of each request body the client may send before the
  // server has read it; the connection's window is this too when it is larger than 64 KiB.
  int32_t window = 65535;
  // Once the server has read this many requests (0: never), a GOAWAY (NO_ERROR) on the
  // connection of the last one, whose last-stream-id is `goaway_last_stream`: its streams above
  // it are not processed, and it ends (FIN) once the streams at or below it are answered.
  size_t goaway_after = 0;
  int32_t goaway_last_stream = 0;
};

// A scripted server that speaks HTTP/2: over TLS when `tls` is set (its ALPN is set to "h2").
std::unique_ptr<RawHttpServer> h2_server(uv_loop_t* loop, RawHttpServer::ScriptFor script_for,
                                         H2ServerOptions options = {},
                                         std::optional<TlsServerOptions> tls = std::nullopt);

}  // namespace corral::test
