// The parts of H1Client (h1_client.h): one request in flight (Exchange), one keep-alive
// connection (Connection) and the pool of one origin (Origin). Internal to worker/http.
#pragma once

#include <http_parser.h>
#include <uv.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/uv/handle.h"
#include "worker/http/client.h"
#include "worker/http/inflate.h"
#include "worker/http/url.h"

namespace corral::worker {
class H1Client;
}

namespace corral::worker::h1 {

class Origin;

struct Exchange {
  HttpRequest req;
  HttpResponse resp;
  HttpClient::Done done;
  HttpUrl url;
  uint64_t deadline_ms = 0;  // uv_now() by which every hop must be done
  uint64_t started_ns = 0;   // this hop's start, for total_ms
  uint64_t max_body = 0;
  bool retried = false;  // sent again once after a stale connection
  uint64_t budget_held = 0;  // counted in the BodyBudget for this exchange
  uint64_t reserved = 0;     // of which reserved up front for a Content-Length
};

class Connection {
 public:
  Connection(H1Client& client, Origin& origin);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects to `addr` within `timeout_ms`, from `source` when it is given (an IPv4 address,
  // port 0); exchanges wait in the origin's queue meanwhile.
  void connect(const sockaddr* addr, uint64_t timeout_ms, const sockaddr_in* source = nullptr);
  // Sends `ex` on this connection, which must be ready and idle.
  void begin(std::unique_ptr<Exchange> ex);
  // Ends the exchange in flight (if any) with `error`, counted as `kind` (an
  // OriginErrorTable::Kind, or -1 for none), and the connection with it.
  void fail(const std::string& error, int kind);
  // Closes the connection; the origin forgets it and the client frees it later.
  void close();
  bool idle() const { return ready_ && !ex_; }
  // Whether the exchange on this connection is the request tagged `tag`.
  bool carries(uint64_t tag) const { return ex_ && ex_->req.tag == tag; }
  bool connected() const { return ready_; }
  // A held connection's pin (HttpRequest::pin); 0 for a pooled one.
  uint64_t pin() const { return pin_; }
  void set_pin(uint64_t pin) { pin_ = pin; }
  // A held connection counted as open (it connected and its origin took it).
  bool pin_open() const { return pin_open_; }
  void set_pin_open() { pin_open_ = true; }
  bool reused() const { return served_ > 0; }
  uint64_t idle_since_ms() const { return idle_since_ms_; }
  size_t held_body() const;
  // The budget: resumes this paused transfer when its waiting bytes fit; false if they
  // don't (it stays paused). Only for a connection in the client's paused list.
  bool try_resume();
  uint64_t waiting_bytes() const { return need_ + stash_body_.size(); }
  // Ends the paused exchange because the budget cannot ever let it finish.
  void fail_over_budget();

 private:
  static void on_connect(uv_connect_t* req, int status);
  static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_timeout(uv_timer_t* t);
  static int on_header_field(http_parser* p, const char* at, size_t len);
  static int on_header_value(http_parser* p, const char* at, size_t len);
  static int on_headers_complete(http_parser* p);
  static int on_body(http_parser* p, const char* at, size_t len);
  static int on_message_complete(http_parser* p);
  static const http_parser_settings kSettings;

  void arm(uint64_t deadline_ms);
  void write_request();
  void feed(const char* data, size_t len);
  void on_end(int status);
  bool take_body(const char* data, size_t len);
  void append_body(const char* data, size_t len);
  bool reserve(uint64_t bytes);
  void complete();
  std::string transport_error(int status) const;
  int open_from(const sockaddr* addr, const sockaddr_in& source);

  H1Client& client_;
  Origin& origin_;
  uv::Handle<uv_tcp_t> tcp_;
  uv::Handle<uv_timer_t> timer_;
  struct PendingWrite {
    uv_write_t req;  // first: the callback gets this pointer back
    std::string bytes;
  };
  std::string out_;  // the request's bytes until its write callback
  http_parser parser_{};
  std::unique_ptr<Exchange> ex_;
  std::unique_ptr<Inflater> inflate_;
  bool in_value_ = false;
  bool ready_ = false;     // connected
  bool closing_ = false;
  bool got_bytes_ = false;  // of this exchange's answer
  bool done_ = false;       // this exchange's answer is complete
  bool keep_alive_ = true;
  bool too_large_ = false;
  bool writing_ = false;
  bool paused_ = false;
  std::string bad_body_;  // why the body could not be decoded
  uint64_t need_ = 0;        // a Content-Length to reserve before the body is read
  std::string stash_body_;   // a body piece the budget did not take yet
  std::string stash_wire_;   // bytes read after it, to parse on resume
  uint64_t armed_ms_ = 0;  // the uv_now() the timer fires at; 0 when it is not running
  uint32_t served_ = 0;
  uint64_t idle_since_ms_ = 0;
  uint64_t pin_ = 0;
  bool pin_open_ = false;
};

class Origin {
 public:
  Origin(H1Client& client, const HttpUrl& url);
  ~Origin();

  // Sends `ex` on an idle connection, a new one, or queues it (FIFO); a pinned one on its
  // pin's own connection (h1_held.cc).
  void submit(std::unique_ptr<Exchange> ex);
  // Closes the connection `pin` owns here, if any (HttpClient::unpin).
  void unpin(uint64_t pin);
  // Ends the exchange tagged `tag` if it is here, queued or on a pooled connection, which
  // closes (HttpClient::cancel). False when it is not here. (A pinned request is not looked
  // for: unpin() closes its connection.)
  bool cancel(uint64_t tag);
  // `c` is ready for its next exchange (connected, or done with one).
  void on_ready(Connection* c);
  // `c` is gone (closed or failed): forget it, and open another for the queue if needed.
  void on_closed(Connection* c);
  // `c` could not connect: the next address is tried, or the oldest queued exchange fails.
  void connect_failed(Connection* c, const std::string& error);
  // Ends every queued exchange with `error` (DNS failed, the client is going away).
  void fail_queue(const std::string& error);
  // Closes the idle connections unused for longer than the client's max_idle_ms. True when the
  // origin holds nothing any more (no connection, nothing queued, no DNS lookup running).
  bool close_idle(uint64_t now);
  size_t idle() const { return idle_.size(); }
  size_t open() const { return conns_.size(); }
  // "http://host:port": the origin's label in metrics and messages.
  const std::string& key() const { return key_; }
  const std::string& host_header() const { return host_header_; }

 private:
  void dispatch();
  void open_connection(size_t addr_index);
  void resolve();
  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  void sweep_queue();
  // Held connections (h1_held.cc).
  void submit_pinned(std::unique_ptr<Exchange> ex);
  void open_pinned(uint64_t pin);
  void pinned_ready(Connection* c);
  void pinned_closed(Connection* c);
  void pinned_connect_failed(Connection* c, const std::string& error);
  void fail_pinned_waiting(const std::string& error);

  H1Client& client_;
  std::string key_, host_, host_header_;
  uint16_t port_;
  std::vector<sockaddr_storage> addrs_;
  uint64_t resolved_ms_ = 0;
  bool literal_ = false;
  uv_getaddrinfo_t* resolving_ = nullptr;
  size_t preferred_addr_ = 0;  // the address that last connected
  std::unordered_map<Connection*, size_t> addr_of_;  // connecting: which address it tries
  std::vector<std::unique_ptr<Connection>> conns_;
  std::vector<Connection*> idle_;  // LIFO: the most recently used first
  size_t connecting_ = 0;
  bool quiet_ = false;  // on_closed must not open connections (connect_failed decides)
  std::deque<std::unique_ptr<Exchange>> queue_;
  uv::Handle<uv_timer_t> sweep_;
  // Held connections by pin, each with the exchange waiting for it to connect.
  struct Held {
    std::unique_ptr<Connection> conn;
    std::unique_ptr<Exchange> waiting;
  };
  std::unordered_map<uint64_t, Held> held_;
  std::vector<uint64_t> pins_resolving_;  // waiting for the host's addresses
};

}  // namespace corral::worker::h1
