// The worker's WebSocket client (RFC 6455) on its libuv loop: ws:// and wss:// sockets that
// live as long as their user wants, for the ws steps of a scenario and the WebSocket load
// model. It shares the lean HTTP client's TLS contexts (CA stores, sessions to resume) and its
// handshake slices (worker/http/link.h), and keeps its own small DNS cache (60 s, as the lean
// client's).
//
// Sockets belong to the client: open() gives a Socket* that stays valid until drop(), which
// the user calls once it no longer wants the socket (after on_closed, or to abandon it; no
// event comes after drop). A dropped socket is freed from the loop, never inside a callback.
// Loop thread only.
#pragma once

#include <netinet/in.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/uv/timer.h"
#include "worker/http/link.h"
#include "worker/http/tls_context.h"
#include "worker/ws/events.h"

namespace corral::worker::ws {

// The sockets of one group (OpenRequest::group), since its first.
struct Counts {
  uint64_t open = 0;              // open now
  uint64_t opened = 0;            // handshakes that succeeded
  uint64_t failed = 0;            // openings that failed (DNS, connect, TLS, the Upgrade answer)
  uint64_t closed_by_server = 0;  // open sockets the server closed or dropped
  uint64_t errors = 0;            // open sockets ended by a protocol error, a reset or a timeout
  uint64_t sent = 0;              // messages sent
  uint64_t received = 0;          // messages received
  // Of the sockets counted in closed_by_server and errors: the server's close code, or 1006
  // when no close frame came.
  std::map<uint16_t, uint64_t> close_codes;
};

class Client {
 public:
  // `contexts` and `handshakes` are the lean client's; both must outlive this client.
  Client(uv_loop_t* loop, tls::Contexts& contexts, Handshakes& handshakes,
         http::TlsOptions default_tls = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Opens a socket; `events` hears of it from the loop, never inside open(), and must outlive
  // it (or drop it first).
  Socket* open(OpenRequest req, Events& events);
  // Closes the socket at once if it is still up (no close handshake) and forgets it.
  void drop(Socket* s);

  // The counts of `group`.
  const Counts& counts(uint32_t group) { return counts_[group]; }
  Counts& counts_of(uint32_t group) { return counts_[group]; }
  void forget_counts(uint32_t group) { counts_.erase(group); }
  size_t sockets() const { return sockets_.size(); }
  // Whether the socket `id` is still the client's (not dropped).
  bool alive(uint64_t id) const;

  // For the sockets (socket.cc).
  uv_loop_t* loop() const { return loop_; }
  Handshakes& handshakes() { return handshakes_; }
  // The TLS context for `req`, or the error that prevents one.
  Result<tls::Context*> tls_context(const OpenRequest& req);
  // Runs `fn` from the loop, after the callbacks of this turn.
  void later(std::function<void()> fn);

 private:
  struct Host {
    std::vector<sockaddr_storage> addrs;
    uint64_t resolved_ms = 0;
    std::vector<uint64_t> waiting;  // sockets waiting for the lookup
    bool resolving = false;
  };
  void resolve(const std::string& host, uint16_t port, uint64_t id);
  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  void run_later();

  uv_loop_t* loop_;
  tls::Contexts& contexts_;
  Handshakes& handshakes_;
  http::TlsOptions default_tls_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Socket>> sockets_;
  std::unordered_map<std::string, Host> hosts_;  // by "host:port"
  std::unordered_map<uint32_t, Counts> counts_;
  std::vector<std::unique_ptr<Socket>> dead_;
  std::vector<std::function<void()>> later_;
  uv::Timer later_timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace corral::worker::ws
