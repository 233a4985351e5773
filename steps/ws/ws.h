// The WebSocket steps' own fields: "ws" opens a socket that lives across the instance's
// following steps, "ws_send" sends on it, "ws_receive" waits for a message that matches,
// "ws_close" closes it. docs/scenarios.md, "WebSocket".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario/model.h"

namespace corral::steps::ws {

constexpr uint64_t kDefaultOpenTimeoutMs = 10000;
constexpr uint64_t kDefaultReceiveTimeoutMs = 10000;
constexpr uint64_t kDefaultCloseTimeoutMs = 5000;
constexpr uint64_t kDefaultMaxMessage = uint64_t{16} << 20;
// Messages kept for a later ws_receive while none waits; the oldest go first.
constexpr size_t kDefaultBacklog = 100;

// "ws": {"url": "ws://...", "socket": "chat", "headers": {...}, "protocols": [...],
//        "max_message": "1MB", "backlog": 100, "ping_every": "30s", "deflate": true,
//        "tls": {...}}; the step's limit is "timeout"
// (10 s); `expect` and `capture` read the 101 answer's status and headers.
struct Open : scenario::KindSpec {
  std::string socket;  // "ws" when the file names none
  scenario::Template url;
  std::vector<std::pair<std::string, scenario::Template>> headers;
  std::vector<std::string> protocols;
  uint64_t max_message = kDefaultMaxMessage;
  size_t backlog = kDefaultBacklog;
  uint64_t ping_every_ms = 0;  // "ping_every": a ping this often while open; 0: none
  bool deflate = true;         // offer permessage-deflate (used when the server agrees)
  // (Its "tls" is the step's request.tls, so that it lies over the scenario's and the
  // daemon's as a request's does.)
};

// What the steps on an open socket share: its name, and the step that opened it (a moved
// instance resumes there: a socket cannot move between workers).
struct OnSocket : scenario::KindSpec {
  std::string socket;
  size_t open_step = 0;
};

// "ws_send": {"socket": "chat", "text": "..." | "json": {...} | "binary_base64": "..."}.
struct Send : OnSocket {
  std::optional<scenario::Template> text;
  std::optional<scenario::JsonTemplate> json;
  std::optional<std::string> binary;  // decoded
};

// "ws_receive": {"socket": "chat", "until": [conditions]}, then "capture" from the message
// that matched; messages that do not match are passed over. The limit is "timeout" (10 s).
struct Receive : OnSocket {
  std::vector<scenario::Condition> until;  // empty: the next message matches
};

// "ws_close": {"socket": "chat", "code": 1000, "reason": "..."}: passes once the server has
// answered the close, or ended the connection. The limit is "timeout" (5 s).
struct Close : OnSocket {
  uint16_t code = 1000;
  std::string reason;
};

}  // namespace corral::steps::ws
