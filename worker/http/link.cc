#include "worker/http/link.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "shared/uv/pulse.h"

namespace corral::worker {
namespace {

// One read buffer for every link of the loop: a read callback consumes its bytes before the
// next read starts, so an idle link holds no buffer at all.
char g_read_buffer[64 * 1024];
// Encrypted bytes on their way to the socket; what the socket does not take at once is copied
// into a write of its own.
std::string g_cipher;

const std::string kNoError;

}  // namespace

// --- Handshakes ---------------------------------------------------------------------------

Handshakes::Handshakes(uv_loop_t* loop, uint64_t slice_ns) : slice_ns_(slice_ns) {
  uv_idle_init(loop, idle_.get());
  idle_.set_live(this);
}

Handshakes::~Handshakes() { idle_.close(); }

void Handshakes::add(Link* l) {
  if (l->queued_) return;
  l->queued_ = true;
  queue_.push_back(l);
  if (queue_.size() == 1) uv_idle_start(idle_.get(), &Handshakes::on_idle);
}

void Handshakes::remove(Link* l) {
  if (!l->queued_) return;
  l->queued_ = false;
  std::erase(queue_, l);
  if (queue_.empty()) uv_idle_stop(idle_.get());
}

void Handshakes::on_idle(uv_idle_t* h) {
  if (auto* self = uv::owner_of<Handshakes>(h)) self->run_slice();
}

// An idle handle runs once per turn of the loop and keeps the loop from blocking in poll while
// links wait: timers and I/O are served between two slices.
void Handshakes::run_slice() {
  const uint64_t start = uv_hrtime();
  while (!queue_.empty()) {
    Link* l = queue_.front();
    queue_.pop_front();
    l->queued_ = false;
    l->handshake_step();                          // may queue links again, or close this one
    if (uv_hrtime() - start >= slice_ns_) break;  // one step at least, however small the slice
  }
  if (queue_.empty()) uv_idle_stop(idle_.get());
}

// --- Link ----------------------------------------------------------------------------------

Link::Link(uv_loop_t* loop, Handshakes& handshakes, Owner* owner)
    : loop_(loop), handshakes_(handshakes), owner_(owner) {
  uv_tcp_init(loop, tcp_.get());
  tcp_.set_live(this);
  uv_timer_init(loop, timer_.get());
  timer_.set_live(this);
}

Link::~Link() {
  close();  // closes the socket
  timer_.close();
}

void Link::connect(const sockaddr* addr, uint64_t deadline_ms, std::unique_ptr<tls::Session> tls,
                   const sockaddr_in* source) {
  tls_ = std::move(tls);
  if (source != nullptr) {
    if (int rc = open_from(addr, *source); rc != 0) {
      failed(std::string("binding source address: ") + uv_strerror(rc), false);
      return;
    }
  }
  auto* req = new uv_connect_t;
  int rc = uv_tcp_connect(req, tcp_.get(), addr, &Link::on_connect);
  if (rc != 0) {
    delete req;
    failed(uv_strerror(rc), false);
    return;
  }
  connecting_ = true;
  arm(deadline_ms);
}

void Link::on_connect(uv_connect_t* req, int status) {
  uv_stream_t* stream = req->handle;
  delete req;
  auto* l = uv::owner_of<Link>(stream);
  if (l == nullptr || l->closed_) return;
  l->connecting_ = false;
  if (status != 0) {
    l->failed(uv_strerror(status), false);
    return;
  }
  uv_tcp_nodelay(l->tcp_.get(), 1);
  l->read_start();
  if (!l->tls_) {
    l->went_up();
    return;
  }
  l->connected_ns_ = uv_hrtime();
  l->handshaking_ = true;
  l->handshakes_.add(l);  // the ClientHello is made in a slice too: it costs a key share
}

void Link::handshake_step() {
  if (closed_ || !handshaking_) return;
  g_cipher.clear();
  tls::Session::Progress p = tls_->handshake(g_cipher);
  if (!g_cipher.empty() && flush(g_cipher.data(), g_cipher.size()) != 0) {
    failed("handshake failed: cannot send to the server", true);
    return;
  }
  if (p == tls::Session::Progress::kFailed) {
    failed(tls_->error(), true);
    return;
  }
  if (p == tls::Session::Progress::kMore) return;  // the server's next flight wakes it
  handshaking_ = false;
  handshake_ms_ = static_cast<double>(uv_hrtime() - connected_ns_) / 1e6;
  handshakes_.count(tls_->resumed());
  went_up();
  if (!closed_) decrypt(nullptr, 0);  // bytes that came with the server's last flight
}

void Link::went_up() {
  up_ = true;
  uv_timer_stop(timer_.get());
  armed_ms_ = 0;
  owner_->on_link_up(*this);
}

void Link::failed(const std::string& error, bool tls) {
  Owner* owner = owner_;
  close();
  owner->on_link_failed(*this, error, tls);
}

void Link::on_alloc(uv_handle_t*, size_t, uv_buf_t* buf) {
  *buf = uv_buf_init(g_read_buffer, sizeof g_read_buffer);
}

void Link::on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  // Every socket's bytes come through here, those of no instance too (held sockets closing at
  // the end of a load test): a loop with thousands of them ready in one turn still beats.
  uv::pulse();
  auto* l = uv::owner_of<Link>(s);
  if (l == nullptr || l->closed_ || n == 0) return;
  if (n < 0) {
    int status = static_cast<int>(n);
    if (l->handshaking_) {
      l->failed(status == UV_EOF ? std::string("handshake failed: the server closed the connection")
                                 : std::string("handshake failed: ") + uv_strerror(status),
                true);
      return;
    }
    std::string error;
    if (status == UV_EOF && l->tls_ && l->tls_->mid_record()) {
      error = "connection closed by the server in the middle of a TLS record (truncated)";
    }
    l->owner_->on_link_down(*l, status, error);
    return;
  }
  if (l->handshaking_) {
    l->tls_->stash(buf->base, static_cast<size_t>(n));
    l->handshakes_.add(l);
    return;
  }
  if (!l->tls_) {
    l->owner_->on_link_data(*l, buf->base, static_cast<size_t>(n));
    return;
  }
  l->decrypt(buf->base, static_cast<size_t>(n));
}

// Plaintext goes to the owner a record at a time; an owner that closes the link stops it.
// What reading makes OpenSSL send (alerts, key updates: rare) has a buffer of its own: the owner
// sends requests from inside the sink, through g_cipher.
void Link::decrypt(const char* data, size_t n) {
  std::string out;
  tls::Session::Read r = tls_->read(
      data, n,
      [this](const char* p, size_t len) {
        owner_->on_link_data(*this, p, len);
        return !closed_;
      },
      out);
  if (closed_) return;
  if (!out.empty()) (void)flush(out.data(), out.size());
  if (r == tls::Session::Read::kClosed) {
    owner_->on_link_down(*this, UV_EOF, "");
  } else if (r == tls::Session::Read::kFailed) {
    owner_->on_link_down(*this, UV_EPROTO, tls_->error());
  }
}

int Link::send(const uv_buf_t* bufs, unsigned nbufs) {
  if (closed_) return UV_ECANCELED;
  if (!tls_) {
    size_t total = 0;
    for (unsigned i = 0; i < nbufs; ++i) total += bufs[i].len;
    int wrote = uv_try_write(tcp_.stream(), bufs, nbufs);
    if (wrote >= 0 && static_cast<size_t>(wrote) == total) return 0;  // the usual case
    if (wrote < 0 && wrote != UV_EAGAIN) return wrote;
    // The rest waits in a buffer of its own until libuv has written it.
    size_t skip = wrote > 0 ? static_cast<size_t>(wrote) : 0;
    std::string rest;
    rest.reserve(total - skip);
    for (unsigned i = 0; i < nbufs; ++i) {
      size_t drop = std::min(skip, bufs[i].len);
      rest.append(bufs[i].base + drop, bufs[i].len - drop);
      skip -= drop;
    }
    return flush(rest.data(), rest.size());
  }
  g_cipher.clear();
  // Small pieces (a request head and its body) go in one record.
  size_t total = 0;
  for (unsigned i = 0; i < nbufs; ++i) total += bufs[i].len;
  bool ok = true;
  if (nbufs > 1 && total <= 16 * 1024) {
    std::string plain;
    plain.reserve(total);
    for (unsigned i = 0; i < nbufs; ++i) plain.append(bufs[i].base, bufs[i].len);
    ok = tls_->write(plain.data(), plain.size(), g_cipher);
  } else {
    for (unsigned i = 0; i < nbufs && ok; ++i)
      ok = tls_->write(bufs[i].base, bufs[i].len, g_cipher);
  }
  if (!ok) return UV_EPROTO;
  return flush(g_cipher.data(), g_cipher.size());
}

// Writes `data` now if the socket takes it, else copies what is left into a write of its own.
int Link::flush(const char* data, size_t n) {
  if (closed_) return UV_ECANCELED;
  uv_buf_t buf = uv_buf_init(const_cast<char*>(data), static_cast<unsigned>(n));
  int wrote = uv_try_write(tcp_.stream(), &buf, 1);
  if (wrote >= 0 && static_cast<size_t>(wrote) == n) return 0;
  if (wrote < 0 && wrote != UV_EAGAIN) return wrote;
  size_t sent = wrote > 0 ? static_cast<size_t>(wrote) : 0;
  auto* w = new PendingWrite;
  w->bytes.assign(data + sent, n - sent);
  buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
  int rc = uv_write(&w->req, tcp_.stream(), &buf, 1, &Link::on_write);
  if (rc != 0) delete w;
  return rc;
}

void Link::on_write(uv_write_t* req, int status) {
  std::unique_ptr<PendingWrite> w(reinterpret_cast<PendingWrite*>(req));
  auto* l = uv::owner_of<Link>(req->handle);
  if (l == nullptr || status == 0 || l->closed_) return;
  if (!l->up_) {
    l->failed(std::string("handshake failed: ") + uv_strerror(status), true);
    return;
  }
  l->owner_->on_link_write_failed(*l, status);
}

void Link::read_stop() {
  if (!reading_) return;
  reading_ = false;
  uv_read_stop(tcp_.stream());
}

void Link::read_start() {
  if (reading_ || closed_) return;
  reading_ = true;
  uv_read_start(tcp_.stream(), &Link::on_alloc, &Link::on_read);
}

// The timer is armed for the earliest deadline it has been asked for, and left running when it
// is no longer needed: most requests share one timeout, so the next one's deadline is later
// and needs no new arming. When it fires, the owner re-arms it for a deadline not reached yet.
// Starting and stopping a timer per request would cost a removal from and an insertion into a
// heap that also holds every waiting instance's timer.
void Link::arm(uint64_t deadline_ms) {
  if (closed_ || (armed_ms_ != 0 && armed_ms_ <= deadline_ms)) return;
  uint64_t now = uv_now(loop_);
  uv_timer_start(timer_.get(), &Link::on_timeout, deadline_ms > now ? deadline_ms - now : 1, 0);
  armed_ms_ = deadline_ms;
}

void Link::on_timeout(uv_timer_t* t) {
  auto* l = uv::owner_of<Link>(t);
  if (l == nullptr || l->closed_) return;
  l->armed_ms_ = 0;
  if (l->up_) {
    l->owner_->on_link_timer(*l);
  } else if (l->handshaking_) {
    l->failed("TLS handshake timed out", true);
  } else {
    l->failed("connection timed out", false);
  }
}

// The socket's descriptor goes at once, not with the object: an owner that drops thousands of
// links in one callback (a load test's late iterations, each opening again) must not hold
// thousands of descriptors until the loop's next turn.
void Link::close() {
  if (closed_) return;
  closed_ = true;
  handshakes_.remove(this);
  uv_timer_stop(timer_.get());
  armed_ms_ = 0;
  read_stop();
  tcp_.close();
}

const std::string& Link::tls_error() const { return tls_ ? tls_->error() : kNoError; }

// A socket bound to `source` before it connects. IP_BIND_ADDRESS_NO_PORT leaves the port to
// connect(), which needs only the whole (source, destination) pair to be unique: each source
// address then has the full ephemeral port range towards each destination.
int Link::open_from(const sockaddr* addr, const sockaddr_in& source) {
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

}  // namespace corral::worker
