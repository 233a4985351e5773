// One HTTP/1.1 connection of the lean client (lean_client.h), over a link that is up (plain TCP
// or TLS): one exchange at a time, its answer parsed by http-parser, kept alive for the next.
// Internal to worker/http.
#pragma once

#include <http_parser.h>

#include <cstdint>
#include <memory>
#include <string>

#include "worker/http/exchange.h"
#include "worker/http/link.h"

namespace corral::worker::lean {
class Origin;
}

namespace corral::worker::h1 {

using lean::Exchange;

class Connection final : public Link::Owner, public lean::Paused {
 public:
  // Takes over `link`, which is up. `pin`: the held connection's pin (HttpRequest::pin), or 0
  // for a pooled one.
  Connection(LeanClient& client, lean::Origin& origin, std::unique_ptr<Link> link,
             uint64_t pin = 0);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends `ex` on this connection, which must be idle.
  void begin(std::unique_ptr<Exchange> ex);
  // Ends the exchange in flight (if any) with `error`, counted as `kind` (an
  // OriginErrorTable::Kind, or -1 for none), and the connection with it.
  void fail(const std::string& error, int kind);
  // Closes the connection; the origin forgets it and the client frees it later.
  void close();
  bool idle() const { return !ex_ && !closing_; }
  // Whether the exchange on this connection is the request tagged `tag`.
  bool carries(uint64_t tag) const { return ex_ && ex_->req.tag == tag; }
  uint64_t pin() const { return pin_; }
  bool reused() const { return served_ > 0; }
  uint64_t idle_since_ms() const { return idle_since_ms_; }
  // While idle: gives back the memory a TLS link keeps for reading.
  void release_buffers() { link_->release_buffers(); }

  // lean::Paused: only while in the client's paused list.
  bool try_resume() override;
  uint64_t held_body() const override { return ex_ ? ex_->resp.body.size() : 0; }
  uint64_t waiting_bytes() const override { return need_ + stash_body_.size(); }
  void fail_over_budget() override;

 private:
  // Link::Owner
  void on_link_up(Link&) override {}
  void on_link_failed(Link&, const std::string&, bool) override {}
  void on_link_data(Link& l, const char* data, size_t n) override;
  void on_link_down(Link& l, int status, const std::string& error) override;
  void on_link_write_failed(Link& l, int status) override;
  void on_link_timer(Link& l) override;

  static int on_header_field(http_parser* p, const char* at, size_t len);
  static int on_header_value(http_parser* p, const char* at, size_t len);
  static int on_headers_complete(http_parser* p);
  static int on_body(http_parser* p, const char* at, size_t len);
  static int on_message_complete(http_parser* p);
  static const http_parser_settings kSettings;

  void write_request();
  void feed(const char* data, size_t len);
  void on_end(int status, const std::string& tls_error);
  void complete();
  std::string transport_error(int status) const;

  LeanClient& client_;
  lean::Origin& origin_;
  std::unique_ptr<Link> link_;
  std::string out_;  // the request's head
  http_parser parser_{};
  std::unique_ptr<Exchange> ex_;
  bool in_value_ = false;
  bool closing_ = false;
  bool got_bytes_ = false;  // of this exchange's answer
  bool done_ = false;       // this exchange's answer is complete
  bool keep_alive_ = true;
  bool paused_ = false;
  uint64_t need_ = 0;       // a Content-Length to reserve before the body is read
  std::string stash_body_;  // a body piece the budget did not take yet
  std::string stash_wire_;  // bytes read after it, to parse on resume
  uint32_t served_ = 0;
  uint64_t idle_since_ms_ = 0;
  uint64_t pin_ = 0;
};

}  // namespace corral::worker::h1
