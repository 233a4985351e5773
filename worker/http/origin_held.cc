// Held connections of an origin (HttpRequest::pin): the load mode's "one keep-alive connection
// per virtual user for the whole test". Each pin owns one connection, opened at its first
// request and reopened at the next request after the server closes it; it is never shared,
// never idle-closed and not counted in max_connections_per_host. Over TLS it is a pinned TLS
// connection that speaks HTTP/1.1 (ALPN offers only http/1.1). A pin's requests come one at a
// time (a VU waits for its answer), so a pin holds at most one exchange waiting to connect.
#include "worker/http/h1_connection.h"
#include "worker/http/lean_client.h"
#include "worker/http/origin.h"

namespace corral::worker::lean {
namespace {

using Kind = OriginErrorTable::Kind;

void fail_exchange(LeanClient& client, std::unique_ptr<Exchange> ex, const std::string& error) {
  ex->resp.status = 0;
  ex->resp.error = error;
  client.exchange_failed(std::move(ex));
}

}  // namespace

void Origin::submit_pinned(std::unique_ptr<Exchange> ex) {
  const uint64_t pin = ex->req.pin;
  if (version_ == http::HttpVersion::kHttp2) {
    fail_exchange(client_, std::move(ex),
                  "held connections speak HTTP/1.1: http_version 2 cannot be used with them");
    return;
  }
  Held& h = held_[pin];
  if (h.conn && h.conn->idle()) {
    h.conn->begin(std::move(ex));
    return;
  }
  if (h.waiting || h.conn) {
    fail_exchange(
        client_, std::move(ex),
        "held connection " + std::to_string(pin & 0xffffffffu) + " is busy with another request");
    return;
  }
  h.waiting = std::move(ex);
  if (h.dialling) return;  // the exchange goes out once it is up
  if (needs_resolve()) {
    pins_resolving_.push_back(pin);
    resolve();
    return;
  }
  open_pinned(pin);
}

void Origin::open_pinned(uint64_t pin) {
  auto it = held_.find(pin);
  if (it == held_.end() || !it->second.waiting || it->second.conn || it->second.dialling) return;
  Held& h = it->second;
  const Exchange& ex = *h.waiting;
  sockaddr_in source{};
  if (!ex.req.source.empty() && uv_ip4_addr(ex.req.source.c_str(), 0, &source) != 0) {
    std::string error = "invalid source address \"" + ex.req.source + "\"";
    std::unique_ptr<Exchange> failed = std::move(h.waiting);
    held_.erase(it);
    fail_exchange(client_, std::move(failed), error);
    return;
  }
  h.dialling = true;
  bool bind = !ex.req.source.empty();
  // May fail at once (pinned_failed, which ends the entry): `h` is not used after this.
  dial(preferred_addr_, pin, ex.deadline_ms, bind ? &source : nullptr);
}

void Origin::pinned_up(std::unique_ptr<Link> link, uint64_t pin) {
  auto it = held_.find(pin);
  if (it == held_.end() || !it->second.dialling) {  // released meanwhile
    link->close();
    client_.free_later(std::move(link));
    return;
  }
  Held& h = it->second;
  h.dialling = false;
  client_.count_connection(false);
  h.conn = std::make_unique<h1::Connection>(client_, *this, std::move(link), pin);
  HeldCounts& n = client_.held_counts(pin);
  ++n.open;
  ++n.opened;
  if (h.waiting) h.conn->begin(std::move(h.waiting));
}

void Origin::pinned_failed(uint64_t pin, const std::string& error, bool tls) {
  ++client_.held_counts(pin).failed;
  auto it = held_.find(pin);
  if (it == held_.end()) return;
  std::unique_ptr<Exchange> ex = std::move(it->second.waiting);
  held_.erase(it);
  if (!ex) return;
  client_.errors().count(key_, Kind::kConnect);
  fail_exchange(client_, std::move(ex), failure(error, tls));
}

// `c` is closed: by the server, a failure, or unpin() (which has removed its entry already).
void Origin::pinned_closed(h1::Connection* c) {
  HeldCounts& n = client_.held_counts(c->pin());
  --n.open;
  auto it = held_.find(c->pin());
  if (it == held_.end() || it->second.conn.get() != c) return;
  ++n.closed;
  client_.free_later(std::move(it->second.conn));
  if (!it->second.waiting && !it->second.dialling) held_.erase(it);
}

void Origin::fail_pinned_waiting(const std::string& error) {
  std::vector<uint64_t> pins = std::move(pins_resolving_);
  pins_resolving_.clear();
  for (uint64_t pin : pins) {
    auto it = held_.find(pin);
    if (it == held_.end() || it->second.conn || it->second.dialling || !it->second.waiting) {
      continue;
    }
    std::unique_ptr<Exchange> ex = std::move(it->second.waiting);
    held_.erase(it);
    fail_exchange(client_, std::move(ex), error);
  }
}

void Origin::unpin(uint64_t pin) {
  auto it = held_.find(pin);
  if (it == held_.end()) return;
  Held h = std::move(it->second);
  held_.erase(it);
  if (h.waiting) fail_exchange(client_, std::move(h.waiting), "the held connection was released");
  if (h.dialling) {
    for (auto d = dials_.begin(); d != dials_.end(); ++d) {
      if (d->pin != pin) continue;
      d->link->close();
      client_.free_later(std::move(d->link));
      dials_.erase(d);
      break;
    }
  }
  if (!h.conn) return;
  h.conn->fail("the held connection was released", -1);  // closes it
  client_.free_later(std::move(h.conn));
}

}  // namespace corral::worker::lean
