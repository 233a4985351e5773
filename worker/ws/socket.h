// One WebSocket of the worker's client (client.h): a link (TCP, TLS for wss://), the HTTP/1.1
// Upgrade handshake parsed by http-parser and checked (shared/ws/handshake.h), then frames
// through wslay (shared/ws/framing.h). Its life:
//
//   kResolving   the client looks the host up (or has it cached)
//   kConnecting  the link connects and, for wss://, runs its TLS handshake
//   kUpgrading   the Upgrade request is sent; the answer is read
//   kOpen        messages go both ways; pings are answered
//   kClosing     our close frame went out: the server's answer, or the end of the stream, ends it
//   kClosed      Events::on_closed ran, once; nothing comes after. After a clean close the link
//                lingers until the server ends TCP, so that TIME_WAIT falls on the server's side
//
// The open deadline covers DNS, connect, TLS and the Upgrade answer; a close waits at most
// kCloseWaitMs for the peer. Internal to worker/ws; users hold a Socket* from Client::open.
#pragma once

#include <http_parser.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shared/http/message.h"
#include "shared/ws/framing.h"
#include "shared/ws/handshake.h"
#include "worker/http/link.h"
#include "worker/http/url.h"
#include "worker/ws/events.h"

namespace corral::worker::ws {

class Client;

class Socket final : public Link::Owner, public corral::ws::Framing::Peer {
 public:
  static constexpr uint64_t kCloseWaitMs = 5000;

  enum class State { kResolving, kConnecting, kUpgrading, kOpen, kClosing, kClosed };

  Socket(Client& client, OpenRequest req, Events& events, uint64_t id);
  ~Socket();
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Sends a message; false when the socket is not open (its close has begun, or it has not
  // opened yet).
  bool send(corral::ws::Kind kind, std::string_view data);
  // Begins the close handshake with `code` (1000 by default) and `reason`.
  void close(uint16_t code = corral::ws::kCloseNormal, std::string_view reason = {});

  State state() const { return state_; }
  uint64_t id() const { return id_; }
  const OpenRequest& request() const { return req_; }
  // The request's URL, split; nullopt when it is no ws:// or wss:// URL.
  const std::optional<HttpUrl>& url() const { return url_; }
  // Whether a wslay context is held now (framing.h): false for a socket between messages.
  bool holds_framing_context() const { return framing_.holds_context(); }
  // What the socket's user keeps with it, so that an event finds it without a lookup; nullptr
  // until set.
  void* user_data() const { return user_data_; }
  void set_user_data(void* data) { user_data_ = data; }

  // For the client: the host's address is known (nullptr: it could not be, `error` says why).
  void resolved(const sockaddr* addr, const std::string& error);
  // For the client: closes the link at once, with no event (Client::drop).
  void abandon();

 private:
  // Link::Owner
  void on_link_up(Link& l) override;
  void on_link_failed(Link& l, const std::string& error, bool tls) override;
  void on_link_data(Link& l, const char* data, size_t n) override;
  void on_link_down(Link& l, int status, const std::string& error) override;
  void on_link_write_failed(Link& l, int status) override;
  void on_link_timer(Link& l) override;
  // Framing::Peer
  void on_message(corral::ws::Kind kind, std::string_view data) override;
  void on_close_received(uint16_t code, std::string_view reason) override;

  static int on_header_field(http_parser* p, const char* at, size_t len);
  static int on_header_value(http_parser* p, const char* at, size_t len);
  static int on_headers_complete(http_parser* p);
  static const http_parser_settings kSettings;

  void read_answer(const char* data, size_t n);
  void upgraded(const char* rest, size_t n);
  void write_out();
  void fail_open(const std::string& error, bool timed_out = false);
  // Reports the end, once. `linger`: after a clean close handshake, the link waits for the
  // server to end TCP first (kCloseWaitMs at most).
  void end(Closed closed, bool linger = false);

  Client& client_;
  OpenRequest req_;
  std::optional<HttpUrl> url_;
  Events& events_;
  uint64_t id_;
  State state_ = State::kResolving;
  std::unique_ptr<Link> link_;
  corral::ws::ClientHello hello_;
  http_parser parser_{};
  http::HeaderList headers_;  // of the Upgrade answer, while it is read
  bool in_value_ = false;
  bool headers_done_ = false;
  std::string protocol_;  // the subprotocol the answer chose
  corral::ws::Framing framing_;
  std::string out_;  // frames to write, between a Framing call and the link's send
  uint64_t open_deadline_ms_ = 0;
  uint64_t started_ns_ = 0;
  bool server_closed_ = false;  // the server sent the first close
  std::string reason_;          // of the server's close
  void* user_data_ = nullptr;
};

}  // namespace corral::worker::ws
