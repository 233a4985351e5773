// The opening handshake of a WebSocket (RFC 6455, section 4), both sides: the client's Upgrade
// request and its check of the server's answer (worker/ws/), and the server's answer to such a
// request (corral-target). Only the handshake: the frames that follow are wslay's
// (shared/ws/framing.h).
//
// A client fails the handshake, with words that name what is wrong, when the answer is not
// 101, lacks "Upgrade: websocket" or "Connection: upgrade", carries the wrong
// Sec-WebSocket-Accept, or picks a subprotocol or an extension the client did not offer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/http/message.h"
#include "shared/status.h"

namespace corral::ws {

// permessage-deflate (RFC 7692) as agreed. corral offers it with no context takeover in either
// direction, so that a socket holds no zlib state between messages.
struct Deflate {
  bool on = false;
  int server_max_window_bits = 15;
  int client_max_window_bits = 15;
  bool server_no_context_takeover = false;
  bool client_no_context_takeover = false;
};

// A fresh Sec-WebSocket-Key: 16 random bytes in base64.
std::string make_key();
// The Sec-WebSocket-Accept that answers `key`: base64(SHA-1(key + the RFC's GUID)).
std::string accept_for(std::string_view key);

// What the client asks for.
struct ClientHello {
  std::string host_header;             // "host[:port]"
  std::string target;                  // path and query, "/" at least
  std::string key;                     // make_key()
  std::vector<std::string> protocols;  // Sec-WebSocket-Protocol, in order of preference
  std::vector<std::string> headers;    // extra "Name: value" lines (cookies, auth)
  bool offer_deflate = false;
};

// Appends the request's head (GET, the Upgrade headers, then `headers`) to `out`.
void append_request(const ClientHello& hello, std::string& out);

// What the server agreed to.
struct Agreed {
  std::string protocol;  // "" when the server chose none
  Deflate deflate;
};

// Checks the server's answer to `hello` (its status and headers). The error names the header
// and what was expected, e.g. "the server answered 200, not 101 Switching Protocols".
Result<Agreed> check_answer(int status, const http::HeaderList& headers, const ClientHello& hello);

// Server side: whether `req` asks to open a WebSocket (GET with "Upgrade: websocket").
bool is_upgrade(const http::Request& req);
// The headers of the 101 answer to `req`, choosing the first of `req`'s subprotocols that
// `supported` holds; an error (to answer 400) names what is missing or wrong in the request.
Result<http::HeaderList> answer_upgrade(const http::Request& req,
                                        const std::vector<std::string>& supported = {});

// Server side: the Sec-WebSocket-Extensions answer to a client's `offers` (that header's
// value): the first permessage-deflate offer corral can keep, agreed with no context takeover
// either way (RFC 7692 lets a server ask that of the client), so that neither side keeps zlib
// state between messages. "" when no offer will do.
std::string deflate_answer(std::string_view offers);

// The comma-separated tokens of a header value, trimmed ("Upgrade, keep-alive").
std::vector<std::string> header_tokens(std::string_view value);

}  // namespace corral::ws
