#include "shared/uv/listener.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "shared/uv/guard.h"

namespace corral::uv {
namespace {

// Connections accepted by the kernel and not yet by the loop. A burst of connects (a load
// test opening thousands of held connections against corral-target) overflows a short queue,
// and each dropped SYN costs its client a 1 s retransmission. The kernel caps it at
// net.core.somaxconn (4096 by default since Linux 5.4).
constexpr int kBacklog = 4096;

std::string errno_text(int err) { return uv_strerror(uv_translate_sys_error(err)); }

Result<sockaddr_storage> parse_address(const std::string& host, int port) {
  if (port < 0 || port > 65535)
    return invalid_argument("port out of range: " + std::to_string(port));
  sockaddr_storage addr{};
  if (uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(&addr)) == 0) return addr;
  std::string bare = host;
  if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  if (uv_ip6_addr(bare.c_str(), port, reinterpret_cast<sockaddr_in6*>(&addr)) == 0) return addr;
  return invalid_argument("\"" + host + "\" is not an IPv4 or IPv6 address");
}

int port_of(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
}

// Whether some process accepts connections on the unix socket `path`. Non-blocking, so a
// listener with a full backlog (EAGAIN) counts as alive rather than stalling the caller.
bool someone_listens(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  bool live = rc == 0 || errno == EAGAIN || errno == EINPROGRESS;
  ::close(fd);
  return live;
}

// Clears the way for binding `path`: nothing there, or a socket file nobody listens on.
Status remove_stale_socket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Status::ok();
  if (!S_ISSOCK(st.st_mode)) return {Code::kAlreadyExists, path + " exists and is not a socket"};
  if (someone_listens(path)) return {Code::kAlreadyExists, "another process listens on " + path};
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return io_error("unlink(" + path + ") failed: " + errno_text(errno));
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Listener>> Listener::tcp(uv_loop_t* loop, const std::string& host, int port,
                                                OnConnection on_connection, bool reuse_port) {
  auto addr = parse_address(host, port);
  if (!addr) return addr.status();
  std::string what = (addr->ss_family == AF_INET6 && host.front() != '[')
                         ? "[" + host + "]:" + std::to_string(port)
                         : host + ":" + std::to_string(port);

  std::unique_ptr<Listener> l(new Listener(std::move(on_connection)));
  uv_tcp_t* tcp = &l->handle_.get()->tcp;
  // With a family the socket exists at once, so that options can be set before bind.
  if (int rc = uv_tcp_init_ex(loop, tcp, addr->ss_family); rc != 0) {
    return io_error("socket(" + what + ") failed: " + uv_strerror(rc));  // not live: not closed
  }
  l->handle_.set_live(l.get());
  if (reuse_port) {
    uv_os_fd_t fd = -1;
    int one = 1;
    if (uv_fileno(reinterpret_cast<uv_handle_t*>(tcp), &fd) != 0 ||
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
      return io_error("setsockopt(SO_REUSEPORT) on " + what + " failed: " + std::strerror(errno));
    }
  }
  int rc = uv_tcp_bind(tcp, reinterpret_cast<const sockaddr*>(&*addr), 0);
  if (rc != 0) return io_error("uv_tcp_bind(" + what + ") failed: " + uv_strerror(rc));
  if (Status s = l->start_listening(what); !s) return s;

  sockaddr_storage bound{};
  int len = sizeof(bound);
  rc = uv_tcp_getsockname(tcp, reinterpret_cast<sockaddr*>(&bound), &len);
  if (rc != 0) return io_error("uv_tcp_getsockname(" + what + ") failed: " + uv_strerror(rc));
  l->port_ = port_of(bound);
  return l;
}

Result<std::unique_ptr<Listener>> Listener::unix_socket(uv_loop_t* loop, const std::string& path,
                                                        int mode, OnConnection on_connection) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return invalid_argument("unix socket path is empty or too long: " + path);
  }
  if (Status s = remove_stale_socket(path); !s) return s;

  std::unique_ptr<Listener> l(new Listener(std::move(on_connection)));
  uv_pipe_t* pipe = &l->handle_.get()->pipe;
  if (uv_pipe_init(loop, pipe, 0) != 0) std::abort();  // cannot fail with a valid loop
  l->handle_.set_live(l.get());
  int rc = uv_pipe_bind(pipe, path.c_str());
  if (rc != 0) return io_error("uv_pipe_bind(" + path + ") failed: " + uv_strerror(rc));

  // The file is ours from here: a failure below destroys `l`, whose close() removes it.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    l->path_ = path;
    l->dev_ = st.st_dev;
    l->ino_ = st.st_ino;
  }
  if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
    return io_error("chmod(" + path + ") failed: " + errno_text(errno));
  }
  if (Status s = l->start_listening(path); !s) return s;
  return l;
}

Status Listener::start_listening(const std::string& what) {
  int rc = uv_listen(raw(), kBacklog, &Listener::on_connection);
  if (rc != 0) return io_error("uv_listen(" + what + ") failed: " + uv_strerror(rc));
  return Status::ok();
}

void Listener::close() {
  handle_.close();
  port_ = 0;
  if (path_.empty()) return;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    ::unlink(path_.c_str());
  }
  path_.clear();
}

void Listener::on_connection(uv_stream_t* server, int status) noexcept {
  auto* self = owner_of<Listener>(server);
  if (self == nullptr) return;
  guard("connection", [self, status] {
    auto cb = self->on_connection_;  // a copy: the callback may destroy this listener
    if (cb) cb(*self, status);
  });
}

}  // namespace corral::uv
