// What a user of the worker's WebSocket client (client.h) asks for and hears back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shared/http/message.h"
#include "shared/http/tls_options.h"
#include "shared/ws/framing.h"

namespace corral::worker::ws {

class Socket;

struct OpenRequest {
  std::string url;                     // ws:// or wss://
  std::vector<std::string> headers;    // extra "Name: value" lines (cookies, auth)
  std::vector<std::string> protocols;  // Sec-WebSocket-Protocol, in order of preference
  uint64_t timeout_ms = 10000;         // DNS, connect, TLS and the Upgrade answer
  uint64_t max_message = 16u << 20;    // the largest message taken from the server
  // TLS options of a wss:// socket, complete; nullptr: the client's defaults.
  std::shared_ptr<const http::TlsOptions> tls;
  std::string source;  // the local IPv4 address to connect from; "": the kernel's choice
  uint64_t ping_every_ms = 0;  // once open, a ping this often (0: none); pongs are not awaited
  bool deflate = true;         // offer permessage-deflate (shared/ws/deflate.h), as browsers do
  uint32_t group = 0;  // whose counts it adds to (Client::counts)
};

// How the opening went. `error` is empty when the socket is open.
struct Opened {
  std::string error;
  bool timed_out = false;
  int status = 0;            // of the Upgrade answer; 0 when none came
  http::HeaderList headers;  // of the Upgrade answer
  std::string protocol;      // the subprotocol the server chose, "" for none
  bool deflate = false;      // permessage-deflate agreed: messages are compressed both ways
  double connect_ms = 0;     // from the start to TCP connected (DNS included)
  double tls_ms = 0;         // the TLS handshake (0 for ws://)
  double total_ms = 0;       // from the start to the 101 read
  bool tls_resumed = false;
};

// How an open socket ended.
struct Closed {
  uint16_t code = 0;       // the close code received (1005: the close had none); 0: no close
  std::string reason;      // the peer's close reason
  bool by_server = false;  // the server began the close, or dropped the connection
  std::string error;       // a protocol error, a reset, a timeout; empty for a clean close
};

class Events {
 public:
  // Exactly one of on_open (error or not) per socket, then, if it opened, any number of
  // on_message and exactly one on_closed. A socket whose opening failed gets no on_closed.
  virtual void on_open(Socket& s, Opened&& opened) = 0;
  virtual void on_message(Socket& s, corral::ws::Kind kind, std::string_view data) = 0;
  virtual void on_closed(Socket& s, Closed&& closed) = 0;

 protected:
  ~Events() = default;
};

}  // namespace corral::worker::ws
