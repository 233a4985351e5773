// A listening socket: TCP on an IPv4 or IPv6 literal, or a unix-domain socket file.
//
// The listener only announces pending connections; the owner accepts each one with
// Stream::accept(loop, listener.raw()) from inside the callback (a connection left unaccepted
// stays in the kernel's backlog). Loop thread only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>

#include "shared/status.h"
#include "shared/uv/handle.h"

namespace corral::uv {

class Listener {
 public:
  // Called once per pending connection, or with a negative libuv status when accepting failed
  // (EMFILE and the like). The callback may close or destroy the listener.
  using OnConnection = std::function<void(Listener& self, int uv_status)>;

  // Listens on `host` (an IPv4 literal, or an IPv6 literal with or without brackets) and
  // `port` (0 picks an ephemeral port; see port()). Errors: kInvalidArgument for a host that
  // is not an IP literal or a port out of range; kIo when bind or listen fails (the message
  // names the call, the address and the errno).
  // With `reuse_port`, the socket sets SO_REUSEPORT: processes that all do so may listen on
  // the same port, and the kernel spreads connections among them.
  static Result<std::unique_ptr<Listener>> tcp(uv_loop_t* loop, const std::string& host, int port,
                                               OnConnection on_connection, bool reuse_port = false);

  // Listens on the unix socket `path` and chmods it to `mode`. A socket file nobody listens on
  // (left by a process that died) is removed first. Errors: kAlreadyExists when a live process
  // listens on `path` or `path` is not a socket; kInvalidArgument when `path` is too long for
  // sockaddr_un; kIo when bind, listen or chmod fails. The permissions are set just after
  // bind, so the directory holding the socket must be what keeps strangers out.
  static Result<std::unique_ptr<Listener>> unix_socket(uv_loop_t* loop, const std::string& path,
                                                       int mode, OnConnection on_connection);

  ~Listener() { close(); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  uv_stream_t* raw() const { return handle_.stream(); }
  // The bound TCP port; 0 for a unix socket or once closed.
  int port() const { return port_; }
  // Stops listening and removes the socket file this listener created (unless another process
  // has replaced it since). Safe to call twice.
  void close();

 private:
  explicit Listener(OnConnection on_connection) : on_connection_(std::move(on_connection)) {}
  Status start_listening(const std::string& what);
  static void on_connection(uv_stream_t* server, int status) noexcept;

  Handle<uv_any_handle> handle_;
  OnConnection on_connection_;
  int port_ = 0;
  std::string path_;  // the socket file to remove on close
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace corral::uv
