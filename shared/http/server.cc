#include "shared/http/server.h"

#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include <unordered_map>

#include "shared/http/connection.h"
#include "shared/uv/listener.h"
#include "shared/uv/stream.h"

namespace corral::http {
namespace {

// The peer of an accepted TCP connection, "127.0.0.1:51234" or "[::1]:51234"; "" when it has
// gone already.
std::string peer_of(const uv_tcp_t* tcp) {
  sockaddr_storage ss{};
  int len = sizeof(ss);
  if (uv_tcp_getpeername(tcp, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  char ip[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    uv_ip6_name(&a, ip, sizeof(ip));
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(a.sin6_port));
  }
  const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
  uv_ip4_name(&a, ip, sizeof(ip));
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

}  // namespace

struct Server::Endpoint {
  explicit Endpoint(Transport t) : transport(t) {}

  Transport transport;
  std::string name;  // "127.0.0.1:8080" or the socket's path, for log lines
  std::unique_ptr<uv::Listener> listener;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections;
};

void Responder::send(Response r) const {
  if (auto connection = connection_.lock()) connection->respond(seq_, std::move(r));
}

Server::Server(uv_loop_t* loop, Handler handler, ServerOptions opts)
    : loop_(loop), handler_(std::make_shared<const Handler>(std::move(handler))), opts_(opts) {}

Server::~Server() { close(); }

Status Server::listen_tcp(const std::string& host, int port, bool reuse_port) {
  auto ep = std::make_unique<Endpoint>(Transport::kTcp);
  auto listener = uv::Listener::tcp(
      loop_, host, port, [this, ep = ep.get()](uv::Listener&, int s) { on_connection(*ep, s); },
      reuse_port);
  if (!listener) return listener.status();
  ep->name = host + ":" + std::to_string((*listener)->port());
  ep->listener = std::move(*listener);
  endpoints_.push_back(std::move(ep));
  return Status::ok();
}

int Server::tcp_port() const {
  for (const auto& ep : endpoints_) {
    if (ep->listener->port() != 0) return ep->listener->port();
  }
  return 0;
}

Status Server::listen_unix(const std::string& path, int mode) {
  auto ep = std::make_unique<Endpoint>(Transport::kUnix);
  auto listener = uv::Listener::unix_socket(
      loop_, path, mode, [this, ep = ep.get()](uv::Listener&, int s) { on_connection(*ep, s); });
  if (!listener) return listener.status();
  ep->name = path;
  ep->listener = std::move(*listener);
  endpoints_.push_back(std::move(ep));
  return Status::ok();
}

void Server::close() {
  auto endpoints = std::move(endpoints_);
  endpoints_.clear();
  for (auto& ep : endpoints) {
    ep->listener->close();
    auto connections = std::move(ep->connections);
    for (auto& [raw, connection] : connections) {
      connection->detach();
      connection->close();
    }
  }
}

size_t Server::connection_count() const {
  size_t n = 0;
  for (const auto& ep : endpoints_) n += ep->connections.size();
  return n;
}

void Server::on_connection(Endpoint& ep, int status) {
  if (status < 0) {
    spdlog::warn("http server: accepting a connection failed: {}", uv_strerror(status));
    return;
  }
  auto stream = uv::Stream::accept(loop_, ep.listener->raw());
  if (!stream) {
    spdlog::warn("http server: {}", stream.status().message());
    return;
  }
  if (ep.connections.size() >= opts_.max_connections && !close_oldest_idle(ep)) {
    // Log the first refusal and then one in a thousand: a flood must not flood the log too.
    if (refused_++ % 1000 == 0) {
      spdlog::warn(
          "http server: {} connections open on {}, the limit, none of them idle; "
          "refused {} so far",
          ep.connections.size(), ep.name, refused_);
    }
    return;  // the accepted stream closes as it goes out of scope
  }
  std::string peer;
  if (ep.transport == Transport::kTcp) {
    auto* tcp = reinterpret_cast<uv_tcp_t*>((*stream)->raw());
    // Answers are single writes; Nagle would hold pipelined ones back for the peer's ACK.
    uv_tcp_nodelay(tcp, 1);
    peer = peer_of(tcp);
  }
  auto connection = std::make_shared<Connection>(
      loop_, std::move(*stream), handler_, opts_, ep.transport, std::move(peer),
      [ep = &ep](Connection* c) { ep->connections.erase(c); });
  ep.connections.emplace(connection.get(), connection);
  connection->start();
}

// Closes the connection of `ep` that has been idle the longest, as nginx reuses its oldest
// keep-alive connections first; false when none is idle. A scan, but only at the cap.
bool Server::close_oldest_idle(Endpoint& ep) {
  std::shared_ptr<Connection> oldest;
  for (const auto& [raw, c] : ep.connections) {
    if (c->idle() && (!oldest || c->answered_ns() < oldest->answered_ns())) oldest = c;
  }
  if (!oldest) return false;
  spdlog::debug("http server: {} connections open on {}, the limit; closing the oldest idle one",
                ep.connections.size(), ep.name);
  oldest->close();  // leaves ep.connections; `oldest` keeps it alive until we return
  return true;
}

}  // namespace corral::http
