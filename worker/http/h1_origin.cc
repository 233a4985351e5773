#include <spdlog/spdlog.h>

#include <cstring>

#include "worker/http/h1_client.h"
#include "worker/http/h1_connection.h"

namespace corral::worker::h1 {
namespace {

using Kind = OriginErrorTable::Kind;
constexpr uint64_t kDnsTtlMs = 60000;          // as curl's DNS cache
constexpr uint64_t kSweepEveryMs = 50;         // queued exchanges past their deadline

bool literal_address(const std::string& host, uint16_t port, sockaddr_storage& out) {
  std::memset(&out, 0, sizeof out);
  if (uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(&out)) == 0) return true;
  return uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6*>(&out)) == 0;
}

}  // namespace

Origin::Origin(H1Client& client, const HttpUrl& url)
    : client_(client),
      key_(url.origin()),
      host_(url.host),
      host_header_(url.host_header()),
      port_(url.port) {
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
  uint64_t now = uv_now(client_.loop());
  while (!ex->retried && !idle_.empty()) {
    Connection* c = idle_.back();
    idle_.pop_back();
    if (now - c->idle_since_ms() > client_.options().max_idle_ms) {
      c->close();
      continue;
    }
    c->begin(std::move(ex));
    return;
  }
  queue_.push_back(std::move(ex));
  dispatch();
}

// Opens connections for queued exchanges, within the cap; a retry may pass the cap by one,
// since it must not wait behind connections that may all be stale.
void Origin::dispatch() {
  if (queue_.empty()) {
    uv_timer_stop(sweep_.get());
    return;
  }
  if (!uv_is_active(reinterpret_cast<uv_handle_t*>(sweep_.get()))) {
    uv_timer_start(
        sweep_.get(), [](uv_timer_t* t) {
          if (auto* o = uv::owner_of<Origin>(t)) o->sweep_queue();
        },
        kSweepEveryMs, kSweepEveryMs);
  }
  if (!literal_ && (addrs_.empty() || uv_now(client_.loop()) - resolved_ms_ > kDnsTtlMs)) {
    resolve();
    return;
  }
  auto cap = static_cast<size_t>(std::max(1L, client_.options().max_connections_per_host));
  while (connecting_ < queue_.size() && conns_.size() < cap) open_connection(preferred_addr_);
  bool retry_waiting = queue_.front()->retried;
  if (retry_waiting && connecting_ == 0) open_connection(preferred_addr_);
}

bool Origin::close_idle(uint64_t now) {
  std::vector<Connection*> old;
  for (Connection* c : idle_) {
    if (now - c->idle_since_ms() > client_.options().max_idle_ms) old.push_back(c);
  }
  for (Connection* c : old) c->close();
  return conns_.empty() && queue_.empty() && held_.empty() && resolving_ == nullptr;
}

void Origin::open_connection(size_t index) {
  auto c = std::make_unique<Connection>(client_, *this);
  Connection* raw = c.get();
  conns_.push_back(std::move(c));
  ++connecting_;
  addr_of_[raw] = index;
  uint64_t now = uv_now(client_.loop());
  const auto& front = queue_.front();
  uint64_t left = front->deadline_ms > now ? front->deadline_ms - now : 1;
  raw->connect(reinterpret_cast<const sockaddr*>(&addrs_[index]), left);
}

void Origin::on_ready(Connection* c) {
  if (c->pin() != 0) {
    pinned_ready(c);
    return;
  }
  if (auto it = addr_of_.find(c); it != addr_of_.end()) {  // just connected
    preferred_addr_ = it->second;
    addr_of_.erase(it);
    --connecting_;
  }
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

void Origin::on_closed(Connection* c) {
  if (c->pin() != 0) {
    pinned_closed(c);
    return;
  }
  if (auto it = addr_of_.find(c); it != addr_of_.end()) {
    addr_of_.erase(it);
    --connecting_;
  }
  std::erase(idle_, c);
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    if (it->get() != c) continue;
    client_.free_later(std::move(*it));
    conns_.erase(it);
    break;
  }
  if (!quiet_) dispatch();
}

void Origin::connect_failed(Connection* c, const std::string& error) {
  if (c->pin() != 0) {
    pinned_connect_failed(c, error);
    return;
  }
  size_t index = addr_of_.count(c) ? addr_of_[c] : 0;
  quiet_ = true;  // what opens next is decided here
  c->close();
  quiet_ = false;
  if (queue_.empty()) return;
  if (index + 1 < addrs_.size()) {
    open_connection(index + 1);  // the host has another address: try it for the same queue
    return;
  }
  preferred_addr_ = 0;
  std::unique_ptr<Exchange> ex = std::move(queue_.front());
  queue_.pop_front();
  client_.errors().count(key_, Kind::kConnect);
  ex->resp.status = 0;
  ex->resp.error = "cannot connect to " + key_ + ": " + error;
  client_.exchange_failed(std::move(ex));
  dispatch();
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
  std::vector<sockaddr_storage> addrs;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    sockaddr_storage s{};
    std::memcpy(&s, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof s));
    addrs.push_back(s);
  }
  uv_freeaddrinfo(res);
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

}  // namespace corral::worker::h1
