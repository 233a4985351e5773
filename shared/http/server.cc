#include "shared/http/server.h"

#include <spdlog/spdlog.h>

#include "shared/http/connection.h"
#include "shared/uv/listener.h"
#include "shared/uv/stream.h"

namespace corral::http {

void Responder::send(Response r) const {
  if (auto connection = connection_.lock()) connection->respond(seq_, std::move(r));
}

Server::Server(uv_loop_t* loop, Handler handler, ServerOptions opts)
    : loop_(loop), handler_(std::make_shared<const Handler>(std::move(handler))), opts_(opts) {}

Server::~Server() { close(); }

Status Server::listen_tcp(const std::string& host, int port) {
  auto listener = uv::Listener::tcp(
      loop_, host, port, [this](uv::Listener& l, int status) { on_connection(l, status); });
  if (!listener) return listener.status();
  listeners_.push_back(std::move(*listener));
  return Status::ok();
}

int Server::tcp_port() const {
  for (const auto& l : listeners_) {
    if (l->port() != 0) return l->port();
  }
  return 0;
}

Status Server::listen_unix(const std::string& path, int mode) {
  auto listener = uv::Listener::unix_socket(
      loop_, path, mode, [this](uv::Listener& l, int status) { on_connection(l, status); });
  if (!listener) return listener.status();
  listeners_.push_back(std::move(*listener));
  return Status::ok();
}

void Server::close() {
  listeners_.clear();  // each closes itself
  auto connections = std::move(connections_);
  connections_.clear();
  for (auto& [raw, connection] : connections) {
    connection->detach();
    connection->close();
  }
}

void Server::on_connection(uv::Listener& listener, int status) {
  if (status < 0) {
    spdlog::warn("http server: accepting a connection failed: {}", uv_strerror(status));
    return;
  }
  auto stream = uv::Stream::accept(loop_, listener.raw());
  if (!stream) {
    spdlog::warn("http server: {}", stream.status().message());
    return;
  }
  if (connections_.size() >= opts_.max_connections) {
    // Log the first refusal and then one in a thousand: a flood must not flood the log too.
    if (refused_++ % 1000 == 0) {
      spdlog::warn("http server: {} connections open, the limit; refused {} so far",
                   connections_.size(), refused_);
    }
    return;  // the accepted stream closes as it goes out of scope
  }
  if ((*stream)->raw()->type == UV_TCP) {
    // Answers are single writes; Nagle would hold pipelined ones back for the peer's ACK.
    uv_tcp_nodelay(reinterpret_cast<uv_tcp_t*>((*stream)->raw()), 1);
  }
  auto connection = std::make_shared<Connection>(loop_, std::move(*stream), handler_, opts_,
                                                 [this](Connection* c) { connections_.erase(c); });
  connections_.emplace(connection.get(), connection);
  connection->start();
}

}  // namespace corral::http
