// One HTTP/2 connection of the lean client (lean_client.h), over a link that is up: h2 chosen by
// ALPN over TLS, or h2c by prior knowledge. nghttp2 does the framing, HPACK and flow control;
// this class puts exchanges on streams, up to the server's SETTINGS_MAX_CONCURRENT_STREAMS,
// and takes their answers in as HTTP/1.1 connections do (headers, decoding, max_response, the
// BodyBudget, redirects by the client).
//
// - Flow control: received bytes are given back to the windows (WINDOW_UPDATE) only once the
//   body has taken them, so a stream paused by the BodyBudget stops its sender after one
//   window instead of piling bytes up here.
// - GOAWAY: no new stream goes on the session; streams the server did not process
//   (REFUSED_STREAM, or above the GOAWAY's last stream) are sent again once on another
//   connection. RST_STREAM from the server is a transport error naming its code.
// - A stream is cancelled (RST_STREAM CANCEL) when its request is (HttpClient::cancel) or its
//   deadline passes; the connection stays.
// Internal to worker/http.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "worker/http/exchange.h"
#include "worker/http/link.h"

namespace corral::worker::lean {
class Origin;
}

namespace corral::worker::h2 {

using lean::Exchange;

class Session final : public Link::Owner {
 public:
  // Takes over `link`, which is up.
  Session(LeanClient& client, lean::Origin& origin, std::unique_ptr<Link> link);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Sends the connection preface and SETTINGS. False when nghttp2 cannot start (then closed).
  bool start();
  // Whether one more stream may start now.
  bool can_take() const;
  // Starts `ex` on a new stream; the session must be able to take it.
  void begin(std::unique_ptr<Exchange> ex);
  // Resets the stream of the request tagged `tag`, if it is here; its callback gets "request
  // cancelled". False when it is not here.
  bool cancel(uint64_t tag);
  // Ends every stream with `error` and closes the connection; the origin is told.
  void close(const std::string& error);
  size_t streams() const { return streams_.size(); }
  uint64_t idle_since_ms() const { return idle_since_ms_; }
  // The server's SETTINGS_MAX_CONCURRENT_STREAMS (100 until it says).
  uint32_t max_streams() const;
  bool closed() const { return closed_; }
  // Sends what nghttp2 has queued (LeanClient::flush_soon calls it once per turn of the loop),
  // and closes a session both sides are done with.
  void flush_now();

  // One exchange on a stream, and what its body waits with while the budget pauses it.
  struct Stream final : lean::Paused {
    Session& session;
    int32_t id = 0;
    std::unique_ptr<Exchange> ex;
    size_t body_sent = 0;         // of the request's body, by read_body
    bool got_bytes = false;       // a frame of the answer came
    bool interim = false;         // the headers in progress are a 1xx
    bool headers_done = false;    // the final headers came
    bool paused = false;          // by the BodyBudget
    bool ended = false;           // the server ended the stream while it was paused
    uint64_t need = 0;            // a content-length to reserve before the body is taken
    std::string wait;             // a decoded piece the budget has no room for yet
    size_t wait_raw = 0;          // the DATA bytes it came from
    std::deque<std::string> raw;  // DATA that came while paused
    uint64_t raw_bytes = 0;
    size_t header_bytes = 0;  // of the answer's heads so far

    explicit Stream(Session& s) : session(s) {}
    bool try_resume() override { return session.resume(*this); }
    uint64_t held_body() const override { return ex ? ex->resp.body.size() : 0; }
    uint64_t waiting_bytes() const override { return need + wait.size() + raw_bytes; }
    void fail_over_budget() override;
  };

 private:
  friend struct Stream;
  static constexpr int kNoKind = -1;  // a failure counted as no OriginErrorTable::Kind
  static Session* of(void* user) { return static_cast<Session*>(user); }
  // Link::Owner
  void on_link_up(Link&) override {}
  void on_link_failed(Link&, const std::string&, bool) override {}
  void on_link_data(Link& l, const char* data, size_t n) override;
  void on_link_down(Link& l, int status, const std::string& error) override;
  void on_link_write_failed(Link& l, int status) override;
  void on_link_timer(Link& l) override;

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                       void* user);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int on_data_chunk(nghttp2_session*, uint8_t flags, int32_t id, const uint8_t* data,
                           size_t len, void* user);
  static int on_stream_close(nghttp2_session*, int32_t id, uint32_t error_code, void* user);
  static ssize_t read_body(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                           uint32_t* flags, nghttp2_data_source* source, void* user);

  Stream* stream(int32_t id);
  void headers_done(Stream& s);
  void data(Stream& s, const uint8_t* data, size_t len);
  void stream_closed(Stream& s, uint32_t error_code);
  // Ends stream `s` now (RST_STREAM with `code`) and its exchange with `error`.
  void reset(Stream& s, uint32_t code, const std::string& error, int kind);
  void finish(int32_t id, bool ok, const std::string& error = "", int kind = -1);
  // The budget has room again for paused stream `s` (lean::Paused::try_resume).
  bool resume(Stream& s);
  void after_call();
  void want_flush();
  void flush();
  void deliver();

  LeanClient& client_;
  lean::Origin& origin_;
  std::unique_ptr<Link> link_;
  nghttp2_session* h2_ = nullptr;
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams_;
  // Exchanges that ended inside nghttp2's callbacks, handed on once it has returned.
  struct Ended {
    std::unique_ptr<Exchange> ex;
    bool ok;
  };
  std::vector<Ended> ended_;
  std::vector<std::unique_ptr<Exchange>> unsent_;  // refused by the server: to send again
  std::string out_;
  uint64_t idle_since_ms_ = 0;
  uint64_t completed_ = 0;
  int depth_ = 0;  // nghttp2 calls in progress
  bool goaway_ = false;
  bool closed_ = false;
  bool flush_pending_ = false;  // in the client's list of sessions to flush
};

}  // namespace corral::worker::h2
