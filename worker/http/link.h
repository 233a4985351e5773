// A client connection's byte stream to one address: TCP, with TLS on top for https
// (tls_session.h). A link connects, runs its TLS handshake in slices (Handshakes), and then
// carries plaintext both ways for its owner, which speaks HTTP/1.1 (h1::Connection) or HTTP/2
// (h2::Session) over it. The owner can change once the link is up: a connection dialled before
// ALPN said which protocol the server speaks is handed to the owner for that protocol.
//
// Reads go through one buffer for every link of the loop, so an idle link holds no buffer;
// over TLS, plaintext is handed on a record at a time. Writes are tried at once
// (uv_try_write); what the socket does not take waits in a buffer of its own until libuv has
// written it. Loop thread only.
#pragma once

#include <netinet/in.h>
#include <uv.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "shared/uv/handle.h"
#include "worker/http/tls_session.h"

namespace corral::worker {

class Link;

// The TLS handshakes of one client, run in slices. A link whose handshake can go on (it just
// connected, or bytes of the server's flight came) waits here in FIFO order, and each turn of
// the loop runs handshake steps for at most kSliceNs: the loop's timers, the heartbeat above all,
// are served between slices however many connections open at once. A full handshake costs
// the client about 0.3-1 ms of CPU (key exchange and the certificate chain), so a burst of
// thousands of new connections could otherwise hold the loop for seconds.
class Handshakes {
 public:
  explicit Handshakes(uv_loop_t* loop, uint64_t slice_ns = kSliceNs);
  ~Handshakes();
  Handshakes(const Handshakes&) = delete;
  Handshakes& operator=(const Handshakes&) = delete;

  static constexpr uint64_t kSliceNs = 3'000'000;

  // Queues `l` for its next step, once.
  void add(Link* l);
  void remove(Link* l);
  size_t waiting() const { return queue_.size(); }
  // Handshakes finished since the client started: full ones and resumed ones.
  uint64_t full() const { return full_; }
  uint64_t resumed() const { return resumed_; }
  void count(bool resumed) { ++(resumed ? resumed_ : full_); }

 private:
  static void on_idle(uv_idle_t* h);
  void run_slice();

  uv::Handle<uv_idle_t> idle_;
  uint64_t slice_ns_;
  std::deque<Link*> queue_;
  uint64_t full_ = 0, resumed_ = 0;
};

class Link {
 public:
  class Owner {
   public:
    // Connected and, over TLS, handshaken: the link carries bytes from now on.
    virtual void on_link_up(Link& l) = 0;
    // It could not connect or handshake: `error` says why ("connection refused", "connection
    // timed out", a TLS failure in words); `tls` tells a TLS failure from a TCP one.
    virtual void on_link_failed(Link& l, const std::string& error, bool tls) = 0;
    // Plaintext from the peer.
    virtual void on_link_data(Link& l, const char* data, size_t n) = 0;
    // The stream ended after it was up: `status` is UV_EOF (the peer closed, or sent TLS
    // close_notify) or a libuv error; `error` is set when TLS failed (a bad record, an alert,
    // a record cut short), and then says what happened.
    virtual void on_link_down(Link& l, int status, const std::string& error) = 0;
    // A write failed with `status` after the link was up.
    virtual void on_link_write_failed(Link& l, int status) = 0;
    // The deadline set with arm() passed.
    virtual void on_link_timer(Link& l) = 0;

   protected:
    ~Owner() = default;
  };

  // `handshakes` runs the handshake of a TLS link; it must outlive the link.
  Link(uv_loop_t* loop, Handshakes& handshakes, Owner* owner);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Connects to `addr` (from `source`, an IPv4 address with port 0, when given), then runs the
  // TLS handshake of `tls` when it is set, all by `deadline_ms` (uv_now()). Calls on_link_up or
  // on_link_failed later, or on_link_failed at once when the socket cannot even be opened.
  void connect(const sockaddr* addr, uint64_t deadline_ms, std::unique_ptr<tls::Session> tls,
               const sockaddr_in* source = nullptr);
  // Hands the link to another owner (after on_link_up).
  void set_owner(Owner* owner) { owner_ = owner; }

  // Sends the bytes of `bufs` in order (encrypted over TLS). Returns 0, or the libuv error of
  // a socket that refused them at once (UV_EPROTO for a TLS failure, in tls_error()).
  int send(const uv_buf_t* bufs, unsigned nbufs);
  // Stops or resumes reading from the socket (a body paused by the memory budget).
  void read_stop();
  void read_start();
  // Calls on_link_timer when uv_now() reaches `deadline_ms`, or earlier when a deadline armed
  // before is earlier; left running when it is no longer needed (see link.cc).
  void arm(uint64_t deadline_ms);
  // Stops everything and closes the socket; no callback comes after this. The timer is freed
  // with the object.
  void close();
  // Over TLS: gives back OpenSSL's read buffer while the link waits (tls::Session).
  void release_buffers() {
    if (tls_ != nullptr) tls_->release_buffers();
  }

  bool up() const { return up_; }
  bool closed() const { return closed_; }
  bool tls() const { return tls_ != nullptr; }
  // Over TLS: whether ALPN chose h2, and whether the session was resumed.
  bool h2() const { return tls_ != nullptr && tls_->h2(); }
  bool resumed() const { return tls_ != nullptr && tls_->resumed(); }
  const char* tls_version() const { return tls_ != nullptr ? tls_->version() : ""; }
  const std::string& tls_error() const;
  // How long the TLS handshake took, from the TCP connection to its end (0 without TLS).
  double handshake_ms() const { return handshake_ms_; }
  uv_loop_t* loop() const { return loop_; }

 private:
  friend class Handshakes;
  static void on_connect(uv_connect_t* req, int status);
  static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_timeout(uv_timer_t* t);
  void handshake_step();
  void went_up();
  void decrypt(const char* data, size_t n);
  int flush(const char* data, size_t n);
  void failed(const std::string& error, bool tls);
  int open_from(const sockaddr* addr, const sockaddr_in& source);

  uv_loop_t* loop_;
  Handshakes& handshakes_;
  Owner* owner_;
  uv::Handle<uv_tcp_t> tcp_;
  uv::Handle<uv_timer_t> timer_;
  std::unique_ptr<tls::Session> tls_;
  struct PendingWrite {
    uv_write_t req;  // first: the callback gets this pointer back
    std::string bytes;
  };
  uint64_t armed_ms_ = 0;      // the uv_now() the timer fires at; 0 when it is not running
  uint64_t connected_ns_ = 0;  // TCP connected, for handshake_ms
  double handshake_ms_ = 0;
  bool connecting_ = false;
  bool handshaking_ = false;
  bool queued_ = false;  // in handshakes_
  bool up_ = false;
  bool closed_ = false;
  bool reading_ = false;
};

}  // namespace corral::worker
