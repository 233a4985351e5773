#include "worker/http/origin.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "worker/http/h1_connection.h"
#include "worker/http/h2_session.h"
#include "worker/http/lean_client.h"

namespace corral::worker::lean {
namespace {

using Kind = OriginErrorTable::Kind;
constexpr uint64_t kDnsTtlMs = 60000;   // as curl's DNS cache
constexpr uint64_t kSweepEveryMs = 50;  // queued exchanges past their deadline

Wire first_wire(http::HttpVersion version, bool tls) {
  if (!tls) return version == http::HttpVersion::kHttp2 ? Wire::kHttp2 : Wire::kHttp1;
  return version == http::HttpVersion::kHttp11 ? Wire::kHttp1 : Wire::kAlpn;
}

}  // namespace

Origin::Origin(LeanClient& client, const HttpUrl& url, http::HttpVersion version, tls::Context* tls)
    : client_(client),
      key_(url.origin()),
      host_(url.host),
      host_header_(url.host_header()),
      port_(url.port),
      version_(version),
      tls_(tls),
      wire_(first_wire(version, tls != nullptr)) {
  sockaddr_storage a;
  if (literal_address(host_, port_, a)) {
    literal_ = true;
    addrs_.push_back(a);
  }
  uv_timer_init(client.loop(), sweep_.get());
  sweep_.set_live(this);
}

Origin::~Origin() {
  if (resolving_ != nullptr) resolving_->data = nullptr;  // its callback frees it
  sweep_.close();
}

void Origin::submit(std::unique_ptr<Exchange> ex) {
  if (ex->req.pin != 0) {
    submit_pinned(std::move(ex));
    return;
  }
  if (wire_ == Wire::kHttp2 ? begin_h2(ex) : (wire_ == Wire::kHttp1 && begin_idle(ex))) return;
  queue_.push_back(std::move(ex));
  dispatch();
}

// Begins `ex` on the most recently used idle connection, closing those idle for too long.
bool Origin::begin_idle(std::unique_ptr<Exchange>& ex) {
  uint64_t now = uv_now(client_.loop());
  while (!ex->retried && !idle_.empty()) {
    h1::Connection* c = idle_.back();
    idle_.pop_back();
    if (now - c->idle_since_ms() > client_.options().max_idle_ms) {
      c->close();
      continue;
    }
    c->begin(std::move(ex));
    return true;
  }
  return false;
}

bool Origin::needs_resolve() const {
  return !literal_ && (addrs_.empty() || uv_now(client_.loop()) - resolved_ms_ > kDnsTtlMs);
}

// Opens connections for queued exchanges, within the cap; a retry may pass the cap by one,
// since it must not wait behind connections that may all be stale. While ALPN has not said
// yet whether the server speaks HTTP/2, one connection is dialled and the rest wait for it.
void Origin::dispatch() {
  if (queue_.empty()) {
    uv_timer_stop(sweep_.get());
    return;
  }
  if (!uv_is_active(reinterpret_cast<uv_handle_t*>(sweep_.get()))) {
    uv_timer_start(
        sweep_.get(),
        [](uv_timer_t* t) {
          if (auto* o = uv::owner_of<Origin>(t)) o->sweep_queue();
        },
        kSweepEveryMs, kSweepEveryMs);
  }
  if (needs_resolve()) {
    resolve();
    return;
  }
  if (wire_ == Wire::kHttp2) {
    dispatch_h2();
    return;
  }
  uint64_t deadline = queue_.front()->deadline_ms;
  if (wire_ == Wire::kAlpn) {
    if (dialing_ == 0) dial(preferred_addr_, 0, deadline);
    return;
  }
  auto cap = static_cast<size_t>(std::max(1L, client_.options().max_connections_per_host));
  while (dialing_ < queue_.size() && conns_.size() + dialing_ < cap) {
    dial(preferred_addr_, 0, deadline);
  }
  if (!queue_.empty() && queue_.front()->retried && dialing_ == 0) {
    dial(preferred_addr_, 0, deadline);
  }
}

void Origin::dial(size_t addr_index, uint64_t pin, uint64_t deadline_ms,
                  const sockaddr_in* source) {
  std::unique_ptr<tls::Session> session;
  if (tls_ != nullptr) {
    bool offer_h2 = pin == 0 && version_ != http::HttpVersion::kHttp11;
    auto made = tls::Session::make(*tls_, host_, port_, offer_h2);
    if (!made) {
      if (pin != 0) {
        pinned_failed(pin, made.status().message(), true);
      } else {
        fail_front(failure(made.status().message(), true), Kind::kConnect);
      }
      return;
    }
    session = std::move(*made);
    // A held connection mostly waits for its VU's next request.
    session->release_after_read(pin != 0);
  }
  auto link = std::make_unique<Link>(client_.loop(), client_.handshakes(), this);
  Link* raw = link.get();
  dials_.push_back(Dial{std::move(link), addr_index, pin});
  if (pin == 0) ++dialing_;
  // May fail at once (on_link_failed, which takes the dial back out).
  raw->connect(reinterpret_cast<const sockaddr*>(&addrs_[addr_index]), deadline_ms,
               std::move(session), source);
}

std::unique_ptr<Link> Origin::take_dial(Link& l, size_t& addr, uint64_t& pin) {
  for (auto it = dials_.begin(); it != dials_.end(); ++it) {
    if (it->link.get() != &l) continue;
    std::unique_ptr<Link> link = std::move(it->link);
    addr = it->addr;
    pin = it->pin;
    if (pin == 0) --dialing_;
    dials_.erase(it);
    return link;
  }
  return nullptr;
}

void Origin::on_link_up(Link& l) {
  size_t addr = 0;
  uint64_t pin = 0;
  std::unique_ptr<Link> link = take_dial(l, addr, pin);
  if (!link) return;
  if (pin != 0) {
    pinned_up(std::move(link), pin);
  } else {
    pooled_up(std::move(link), addr);
  }
}

void Origin::on_link_failed(Link& l, const std::string& error, bool tls) {
  size_t addr = 0;
  uint64_t pin = 0;
  std::unique_ptr<Link> link = take_dial(l, addr, pin);
  if (!link) return;
  client_.free_later(std::move(link));  // its callback is on the stack
  if (pin != 0) {
    pinned_failed(pin, error, tls);
  } else {
    pooled_failed(error, tls, addr);
  }
}

void Origin::pooled_up(std::unique_ptr<Link> link, size_t addr) {
  preferred_addr_ = addr;
  if (version_ == http::HttpVersion::kHttp2 && tls_ != nullptr && !link->h2()) {
    link->close();
    client_.free_later(std::move(link));
    fail_front("http_version is 2, but the server chose HTTP/1.1 by ALPN (" + key_ + ")",
               Kind::kConnect);
    dispatch();
    return;
  }
  bool learnt = wire_ == Wire::kAlpn;
  if (learnt) wire_ = link->h2() ? Wire::kHttp2 : Wire::kHttp1;
  client_.count_connection(wire_ == Wire::kHttp2);
  if (wire_ == Wire::kHttp2) {
    adopt_h2(std::move(link));
    return;
  }
  auto c = std::make_unique<h1::Connection>(client_, *this, std::move(link));
  h1::Connection* raw = c.get();
  conns_.push_back(std::move(c));
  on_ready(raw);
  if (learnt) dispatch();  // HTTP/1.1: more connections for the rest of the queue
}

void Origin::pooled_failed(const std::string& error, bool tls, size_t addr) {
  if (queue_.empty()) return;
  if (!tls && addr + 1 < addrs_.size()) {
    dial(addr + 1, 0, queue_.front()->deadline_ms);  // the host has another address
    return;
  }
  preferred_addr_ = 0;
  fail_front(failure(error, tls), Kind::kConnect);
  dispatch();
}

std::string Origin::failure(const std::string& error, bool tls) const {
  return tls ? error + " (" + key_ + ")" : "cannot connect to " + key_ + ": " + error;
}

void Origin::fail_front(const std::string& error, Kind kind) {
  if (queue_.empty()) return;
  std::unique_ptr<Exchange> ex = std::move(queue_.front());
  queue_.pop_front();
  client_.errors().count(key_, kind);
  ex->resp.status = 0;
  ex->resp.error = error;
  client_.exchange_failed(std::move(ex));
}

void Origin::on_ready(h1::Connection* c) {
  if (c->pin() != 0) return;  // a held connection waits for its pin's next request
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if ((*it)->retried && c->reused()) continue;  // a retry goes on a fresh connection
    std::unique_ptr<Exchange> ex = std::move(*it);
    queue_.erase(it);
    if (queue_.empty()) uv_timer_stop(sweep_.get());
    c->begin(std::move(ex));
    return;
  }
  idle_.push_back(c);
}

void Origin::on_closed(h1::Connection* c) {
  if (c->pin() != 0) {
    pinned_closed(c);
    return;
  }
  std::erase(idle_, c);
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    if (it->get() != c) continue;
    client_.free_later(std::move(*it));
    conns_.erase(it);
    break;
  }
  dispatch();
}

bool Origin::close_idle(uint64_t now) {
  std::vector<h1::Connection*> old;
  for (h1::Connection* c : idle_) {
    if (now - c->idle_since_ms() > client_.options().max_idle_ms) {
      old.push_back(c);
    } else {
      c->release_buffers();  // idle now: what it keeps for reading can go
    }
  }
  for (h1::Connection* c : old) c->close();
  bool h2_empty = close_idle_h2(now);
  return conns_.empty() && h2_empty && dials_.empty() && queue_.empty() && held_.empty() &&
         resolving_ == nullptr;
}

void Origin::fail_queue(const std::string& error) {
  fail_pinned_waiting(error);
  std::deque<std::unique_ptr<Exchange>> failed = std::move(queue_);
  queue_.clear();
  uv_timer_stop(sweep_.get());
  for (auto& ex : failed) {
    ex->resp.status = 0;
    ex->resp.error = error;
    client_.exchange_failed(std::move(ex));
  }
}

bool Origin::cancel(uint64_t tag) {
  static const std::string kCancelled = "request cancelled";
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if ((*it)->req.tag != tag) continue;
    std::unique_ptr<Exchange> ex = std::move(*it);
    queue_.erase(it);
    ex->resp.status = 0;
    ex->resp.error = kCancelled;
    client_.exchange_failed(std::move(ex));
    return true;
  }
  for (auto& c : conns_) {
    if (!c->carries(tag)) continue;
    c->fail(kCancelled, -1);  // closes it: `conns_` changes, so return at once
    return true;
  }
  for (auto& s : sessions_) {
    if (s->cancel(tag)) return true;
  }
  return false;
}

void Origin::sweep_queue() {
  uint64_t now = uv_now(client_.loop());
  std::vector<std::unique_ptr<Exchange>> late;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->deadline_ms <= now) {
      late.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  if (queue_.empty()) uv_timer_stop(sweep_.get());
  for (auto& ex : late) {
    client_.errors().count(key_, Kind::kTimeout);
    ex->resp.status = 0;
    ex->resp.error = "Timeout was reached (waiting for a connection to " + key_ + ")";
    ex->resp.timed_out = true;
    client_.exchange_failed(std::move(ex));
  }
}

size_t Origin::idle() const {
  size_t n = idle_.size();
  for (const auto& s : sessions_) n += s->streams() == 0 ? 1 : 0;
  return n;
}

size_t Origin::open() const { return conns_.size() + sessions_.size() + dialing_; }

void Origin::resolve() {
  if (resolving_ != nullptr) return;
  auto* req = new uv_getaddrinfo_t;
  req->data = this;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string port = std::to_string(port_);
  int rc = uv_getaddrinfo(client_.loop(), req, &Origin::on_resolved, host_.c_str(), port.c_str(),
                          &hints);
  if (rc != 0) {
    delete req;
    client_.errors().count(key_, Kind::kConnect);
    fail_queue("could not resolve host " + host_ + ": " + uv_strerror(rc));
    return;
  }
  resolving_ = req;
}

void Origin::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
  auto* o = static_cast<Origin*>(req->data);
  delete req;
  std::vector<sockaddr_storage> addrs = take_addresses(res);
  if (o == nullptr) return;  // the origin went away meanwhile
  o->resolving_ = nullptr;
  if (status != 0 || addrs.empty()) {
    o->client_.errors().count(o->key_, Kind::kConnect);
    o->fail_queue("could not resolve host " + o->host_ + ": " +
                  (status != 0 ? uv_strerror(status) : "no address"));
    return;
  }
  o->addrs_ = std::move(addrs);
  o->resolved_ms_ = uv_now(o->client_.loop());
  o->preferred_addr_ = 0;
  std::vector<uint64_t> pins = std::move(o->pins_resolving_);
  o->pins_resolving_.clear();
  for (uint64_t pin : pins) o->open_pinned(pin);
  o->dispatch();
}

}  // namespace corral::worker::lean
