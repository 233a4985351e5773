#include "worker/ws/client.h"

#include <cstring>

#include "worker/ws/socket.h"

namespace corral::worker::ws {
namespace {

constexpr uint64_t kDnsTtlMs = 60000;  // as the lean client's

// One lookup on libuv's thread pool; it outlives a client that goes away meanwhile.
struct Lookup {
  uv_getaddrinfo_t req;
  Client* client;
  std::weak_ptr<bool> alive;
  std::string key;
};

}  // namespace

Client::Client(uv_loop_t* loop, tls::Contexts& contexts, Handshakes& handshakes,
               http::TlsOptions default_tls)
    : loop_(loop),
      contexts_(contexts),
      handshakes_(handshakes),
      default_tls_(std::move(default_tls)),
      later_timer_(loop) {}

Client::~Client() {
  *alive_ = false;
  for (auto& [id, s] : sockets_) s->abandon();
  later_timer_.close();
}

Socket* Client::open(OpenRequest req, Events& events) {
  const uint64_t id = next_id_++;
  auto owned = std::make_unique<Socket>(*this, std::move(req), events, id);
  Socket* s = owned.get();
  sockets_.emplace(id, std::move(owned));
  later([this, id] {
    auto it = sockets_.find(id);
    if (it == sockets_.end()) return;
    Socket& socket = *it->second;
    const auto& url = socket.url();
    if (!url) {
      socket.resolved(nullptr, "\"" + socket.request().url + "\" is not a ws:// or wss:// URL");
      return;
    }
    resolve(url->host, url->port, id);
  });
  return s;
}

void Client::drop(Socket* s) {
  if (s == nullptr) return;
  auto it = sockets_.find(s->id());
  if (it == sockets_.end()) return;
  it->second->abandon();
  dead_.push_back(std::move(it->second));
  sockets_.erase(it);
  later([] {});  // the dead are freed when the queue runs
}

bool Client::alive(uint64_t id) const { return sockets_.count(id) != 0; }

Result<tls::Context*> Client::tls_context(const OpenRequest& req) {
  return contexts_.context(req.tls ? *req.tls : default_tls_, uv_now(loop_));
}

void Client::later(std::function<void()> fn) {
  later_.push_back(std::move(fn));
  if (later_.size() == 1) later_timer_.start(0, 0, [this] { run_later(); });
}

void Client::run_later() {
  std::vector<std::function<void()>> now = std::move(later_);
  later_.clear();
  for (auto& fn : now) fn();
  dead_.clear();
}

void Client::resolve(const std::string& host, uint16_t port, uint64_t id) {
  sockaddr_storage literal;
  if (literal_address(host, port, literal)) {
    sockets_.at(id)->resolved(reinterpret_cast<const sockaddr*>(&literal), "");
    return;
  }
  const std::string key = host + ":" + std::to_string(port);
  Host& h = hosts_[key];
  if (!h.addrs.empty() && uv_now(loop_) - h.resolved_ms <= kDnsTtlMs) {
    sockets_.at(id)->resolved(reinterpret_cast<const sockaddr*>(&h.addrs.front()), "");
    return;
  }
  h.waiting.push_back(id);
  if (h.resolving) return;
  auto* l = new Lookup{{}, this, alive_, key};
  l->req.data = l;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string service = std::to_string(port);
  int rc =
      uv_getaddrinfo(loop_, &l->req, &Client::on_resolved, host.c_str(), service.c_str(), &hints);
  if (rc != 0) {
    delete l;
    std::vector<uint64_t> waiting = std::move(h.waiting);
    h.waiting.clear();
    for (uint64_t w : waiting) {
      if (alive(w)) {
        sockets_.at(w)->resolved(nullptr,
                                 "could not resolve host " + host + ": " + uv_strerror(rc));
      }
    }
    return;
  }
  h.resolving = true;
}

void Client::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
  std::unique_ptr<Lookup> l(static_cast<Lookup*>(req->data));
  std::vector<sockaddr_storage> addrs = take_addresses(res);
  if (l->alive.expired() || !*l->alive.lock()) return;  // the client went away meanwhile
  Client& c = *l->client;
  Host& h = c.hosts_[l->key];
  h.resolving = false;
  std::vector<uint64_t> waiting = std::move(h.waiting);
  h.waiting.clear();
  std::string error;
  if (status != 0 || addrs.empty()) {
    error = "could not resolve host " + l->key.substr(0, l->key.rfind(':')) + ": " +
            (status != 0 ? uv_strerror(status) : "no address");
  } else {
    h.addrs = std::move(addrs);
    h.resolved_ms = uv_now(c.loop_);
  }
  for (uint64_t id : waiting) {
    if (!c.alive(id)) continue;
    const sockaddr* a =
        error.empty() ? reinterpret_cast<const sockaddr*>(&h.addrs.front()) : nullptr;
    c.sockets_.at(id)->resolved(a, error);
  }
}

}  // namespace corral::worker::ws
