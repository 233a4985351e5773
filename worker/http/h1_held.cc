// Held connections of an origin (HttpRequest::pin): the load mode's "one keep-alive connection
// per virtual user for the whole test". Each pin owns one connection, opened at its first
// request and reopened at the next request after the server closes it; it is never shared,
// never idle-closed and not counted in max_connections_per_host. A pin's requests come one at
// a time (a VU waits for its answer), so a pin holds at most one exchange waiting to connect.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "worker/http/h1_client.h"
#include "worker/http/h1_connection.h"

namespace corral::worker::h1 {
namespace {

using Kind = OriginErrorTable::Kind;

void fail_exchange(H1Client& client, std::unique_ptr<Exchange> ex, const std::string& error) {
  ex->resp.status = 0;
  ex->resp.error = error;
  client.exchange_failed(std::move(ex));
}

}  // namespace

void Origin::submit_pinned(std::unique_ptr<Exchange> ex) {
  const uint64_t pin = ex->req.pin;
  Held& h = held_[pin];
  if (h.conn && h.conn->idle()) {
    h.conn->begin(std::move(ex));
    return;
  }
  if (h.waiting || (h.conn && h.conn->connected())) {
    fail_exchange(client_, std::move(ex),
                  "held connection " + std::to_string(pin & 0xffffffffu) +
                      " is busy with another request");
    return;
  }
  h.waiting = std::move(ex);
  if (h.conn) return;  // connecting: the exchange goes out once it is ready
  if (!literal_ && (addrs_.empty() || uv_now(client_.loop()) - resolved_ms_ > 60000)) {
    pins_resolving_.push_back(pin);
    resolve();
    return;
  }
  open_pinned(pin);
}

void Origin::open_pinned(uint64_t pin) {
  auto it = held_.find(pin);
  if (it == held_.end() || !it->second.waiting || it->second.conn) return;
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
  uint64_t now = uv_now(client_.loop());
  uint64_t left = ex.deadline_ms > now ? ex.deadline_ms - now : 1;
  bool bind = !ex.req.source.empty();
  h.conn = std::make_unique<Connection>(client_, *this);
  Connection* c = h.conn.get();
  c->set_pin(pin);
  // May fail at once (connect_failed, which ends the entry): `h` is not used after this.
  c->connect(reinterpret_cast<const sockaddr*>(&addrs_[preferred_addr_]), left,
             bind ? &source : nullptr);
}

void Origin::pinned_ready(Connection* c) {
  auto it = held_.find(c->pin());
  if (it == held_.end() || it->second.conn.get() != c) {
    c->close();
    return;
  }
  if (!c->pin_open()) {  // just connected
    c->set_pin_open();
    HeldCounts& n = client_.held_counts(c->pin());
    ++n.open;
    ++n.opened;
  }
  if (it->second.waiting) c->begin(std::move(it->second.waiting));
}

// `c` is closed: by the server, a failure, or unpin() (which has removed its entry already).
void Origin::pinned_closed(Connection* c) {
  HeldCounts& n = client_.held_counts(c->pin());
  if (c->pin_open()) --n.open;
  auto it = held_.find(c->pin());
  if (it == held_.end() || it->second.conn.get() != c) return;
  if (c->pin_open()) ++n.closed;
  client_.free_later(std::move(it->second.conn));
  if (!it->second.waiting) held_.erase(it);
}

void Origin::pinned_connect_failed(Connection* c, const std::string& error) {
  auto it = held_.find(c->pin());
  std::unique_ptr<Exchange> ex;
  if (it != held_.end() && it->second.conn.get() == c) ex = std::move(it->second.waiting);
  ++client_.held_counts(c->pin()).failed;
  c->close();  // forgets the entry, whose exchange is taken
  if (!ex) return;
  client_.errors().count(key_, Kind::kConnect);
  fail_exchange(client_, std::move(ex), "cannot connect to " + key_ + ": " + error);
}

void Origin::fail_pinned_waiting(const std::string& error) {
  std::vector<uint64_t> pins = std::move(pins_resolving_);
  pins_resolving_.clear();
  for (uint64_t pin : pins) {
    auto it = held_.find(pin);
    if (it == held_.end() || it->second.conn || !it->second.waiting) continue;
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
  if (!h.conn) return;
  h.conn->fail("the held connection was released", -1);  // closes it
  client_.free_later(std::move(h.conn));
}

// A socket bound to `source` before it connects. IP_BIND_ADDRESS_NO_PORT leaves the port to
// connect(), which needs only the whole (source, destination) pair to be unique: each source
// address then has the full ephemeral port range towards each destination.
int Connection::open_from(const sockaddr* addr, const sockaddr_in& source) {
  if (addr->sa_family != AF_INET) return UV_EAFNOSUPPORT;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&source), sizeof source) != 0) {
    int rc = -errno;
    ::close(fd);
    return rc;
  }
  int rc = uv_tcp_open(tcp_.get(), fd);
  if (rc != 0) ::close(fd);
  return rc;
}

}  // namespace corral::worker::h1
