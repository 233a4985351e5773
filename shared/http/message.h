// The request a handler receives and the response it gives back (see server.h).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corral::uv {
class Stream;
}

namespace corral::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The kind of listener a request came through. Only local users can reach a unix socket (its
// mode and directory keep others out), so a handler may trust it more than TCP.
enum class Transport { kUnix, kTcp };

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // as sent, not percent-decoded: "/runs/42"
  std::string query;   // after '?', without it; "" when absent
  HeaderList headers;  // in arrival order, names as sent
  std::string body;
  // Set by the server. kTcp by default, so that a Request built elsewhere gets the scrutiny a
  // TCP one would.
  Transport transport = Transport::kTcp;
  std::string peer;  // TCP: the client's address, "127.0.0.1:51234" or "[::1]:51234"; unix: ""

  // The first header called `name` (case-insensitive), or "" when there is none.
  std::string header(std::string_view name) const;
  // The first query parameter called `name`, percent-decoded ('+' reads as a space);
  // "" for a bare "?flag", nullopt when absent.
  std::optional<std::string> query_param(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra headers. Content-Length, Content-Type and Connection are the server's: those named
  // here are dropped (but Connection in a 101 with `upgrade`), as is any header whose name or
  // value holds CR or LF.
  HeaderList headers;
  // A 101 that switches the connection to another protocol (a WebSocket): once its head is
  // queued, the server hands the connection's stream, with the bytes read past the request, to
  // `upgrade` and forgets the connection. Ignored in any other answer.
  std::function<void(std::unique_ptr<uv::Stream> stream, std::string rest)> upgrade;

  // `body` serialised; invalid UTF-8 in strings is replaced rather than thrown about.
  static Response json(int status, const nlohmann::json& body);
  // {"error": message}
  static Response error(int status, std::string message);
};

// How a response ends its connection header, which depends on the request it answers.
enum class ConnectionHeader { kNone, kKeepAlive, kClose };

// Appends the wire form of `r` to `out`: status line, headers (always Content-Type and
// Content-Length), blank line, and the body unless `omit_body` (HEAD, 204, 304).
void append_response(const Response& r, ConnectionHeader connection, bool omit_body,
                     std::string& out);

// Decodes %XX escapes (and '+' as a space when `plus_is_space`); a malformed escape is kept
// as it is.
std::string percent_decode(std::string_view s, bool plus_is_space);

bool iequals(std::string_view a, std::string_view b);

}  // namespace corral::http
