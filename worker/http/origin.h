// The connections of one origin of the lean client (lean_client.h): one scheme, host and port,
// with one set of TLS options and one HTTP version. It resolves the host, dials links (TCP,
// then TLS), and puts each exchange on a connection: an idle HTTP/1.1 one (LIFO), or a stream
// of an HTTP/2 session with room, or a new connection within max_connections_per_host; the
// rest waits in FIFO order. Held connections (HttpRequest::pin) are in origin_held.cc, the
// HTTP/2 pool in origin_h2.cc. Internal to worker/http.
#pragma once

#include <netinet/in.h>
#include <uv.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/http/tls_options.h"
#include "shared/uv/handle.h"
#include "worker/http/exchange.h"
#include "worker/http/link.h"

namespace corral::worker::h1 {
class Connection;
}
namespace corral::worker::h2 {
class Session;
}

namespace corral::worker::lean {

// How an origin's connections speak, as far as it is known.
enum class Wire {
  kHttp1,  // HTTP/1.1 (http://, or https:// with http_version 1.1, or ALPN chose it)
  kHttp2,  // HTTP/2 (h2c by prior knowledge, or ALPN chose h2)
  kAlpn,   // https:// with http_version auto or 2: the first connection's ALPN decides
};

class Origin final : public Link::Owner {
 public:
  // `tls`: the TLS context of an https origin (outlives it), nullptr for http.
  Origin(LeanClient& client, const HttpUrl& url, http::HttpVersion version, tls::Context* tls);
  ~Origin();
  Origin(const Origin&) = delete;
  Origin& operator=(const Origin&) = delete;

  // Sends `ex` on a connection that can take it, a new one, or queues it (FIFO); a pinned one
  // on its pin's own connection (origin_held.cc).
  void submit(std::unique_ptr<Exchange> ex);
  // Closes the connection `pin` owns here, if any (HttpClient::unpin).
  void unpin(uint64_t pin);
  // Ends the exchange tagged `tag` if it is here, queued, on a pooled connection (which
  // closes) or an HTTP/2 stream (which is reset). False when it is not here.
  bool cancel(uint64_t tag);
  // An HTTP/1.1 connection is ready for its next exchange, or gone.
  void on_ready(h1::Connection* c);
  void on_closed(h1::Connection* c);
  // An HTTP/2 session has room for more streams, or is gone; `unsent` are the exchanges it
  // took that the server never processed (GOAWAY, REFUSED_STREAM): they are sent again.
  void on_room(h2::Session* s);
  void on_closed(h2::Session* s, std::vector<std::unique_ptr<Exchange>> unsent);
  // Ends every queued exchange with `error` (DNS failed, the client is going away).
  void fail_queue(const std::string& error);
  // Closes the connections idle for longer than the client's max_idle_ms, and has the other
  // idle HTTP/1.1 ones give back their TLS read buffers. True when the origin holds nothing any
  // more (no connection, nothing queued, no DNS lookup running).
  bool close_idle(uint64_t now);
  size_t idle() const;
  size_t open() const;
  // "http://host:port" or "https://host:port": the origin's label in metrics and messages.
  const std::string& key() const { return key_; }
  const std::string& host_header() const { return host_header_; }
  Wire wire() const { return wire_; }
  // Streams one HTTP/2 session takes, as the origin's last session learned it from its server
  // (100 until one says): what a new session assumes until its own server's SETTINGS come.
  uint32_t h2_streams_hint() const { return h2_streams_hint_; }
  // Whether its requests go over TLS.
  bool tls() const { return tls_ != nullptr; }

 private:
  // A link being dialled: for the pool (pin 0) or for a held connection.
  struct Dial {
    std::unique_ptr<Link> link;
    size_t addr = 0;
    uint64_t pin = 0;
  };

  // Link::Owner, for links being dialled.
  void on_link_up(Link& l) override;
  void on_link_failed(Link& l, const std::string& error, bool tls) override;
  void on_link_data(Link&, const char*, size_t) override {}
  void on_link_down(Link&, int, const std::string&) override {}
  void on_link_write_failed(Link&, int) override {}
  void on_link_timer(Link&) override {}

  void dispatch();
  bool needs_resolve() const;
  void dial(size_t addr_index, uint64_t pin, uint64_t deadline_ms,
            const sockaddr_in* source = nullptr);
  std::unique_ptr<Link> take_dial(Link& l, size_t& addr, uint64_t& pin);
  void pooled_up(std::unique_ptr<Link> link, size_t addr);
  void pooled_failed(const std::string& error, bool tls, size_t addr);
  void fail_front(const std::string& error, OriginErrorTable::Kind kind);
  void resolve();
  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  void sweep_queue();
  std::string failure(const std::string& error, bool tls) const;
  // HTTP/1.1 pool.
  bool begin_idle(std::unique_ptr<Exchange>& ex);
  // HTTP/2 pool (origin_h2.cc).
  bool begin_h2(std::unique_ptr<Exchange>& ex);
  void dispatch_h2();
  void adopt_h2(std::unique_ptr<Link> link);
  bool close_idle_h2(uint64_t now);
  // Held connections (origin_held.cc).
  void submit_pinned(std::unique_ptr<Exchange> ex);
  void open_pinned(uint64_t pin);
  void pinned_up(std::unique_ptr<Link> link, uint64_t pin);
  void pinned_failed(uint64_t pin, const std::string& error, bool tls);
  void pinned_closed(h1::Connection* c);
  void fail_pinned_waiting(const std::string& error);

  LeanClient& client_;
  std::string key_, host_, host_header_;
  uint16_t port_;
  http::HttpVersion version_;
  tls::Context* tls_;
  Wire wire_;
  std::vector<sockaddr_storage> addrs_;
  uint64_t resolved_ms_ = 0;
  bool literal_ = false;
  uv_getaddrinfo_t* resolving_ = nullptr;
  size_t preferred_addr_ = 0;  // the address that last connected
  std::vector<Dial> dials_;    // pooled and pinned links being dialled
  size_t dialing_ = 0;         // of which pooled
  std::vector<std::unique_ptr<h1::Connection>> conns_;
  std::vector<h1::Connection*> idle_;  // LIFO: the most recently used first
  std::vector<std::unique_ptr<h2::Session>> sessions_;
  uint32_t h2_streams_hint_ = 100;  // streams one session takes, until a server says
  std::deque<std::unique_ptr<Exchange>> queue_;
  uv::Handle<uv_timer_t> sweep_;
  // Held connections by pin, each with the exchange waiting for it to connect.
  struct Held {
    std::unique_ptr<h1::Connection> conn;
    bool dialling = false;
    std::unique_ptr<Exchange> waiting;
  };
  std::unordered_map<uint64_t, Held> held_;
  std::vector<uint64_t> pins_resolving_;  // waiting for the host's addresses
};

}  // namespace corral::worker::lean
