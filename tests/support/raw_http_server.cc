#include "tests/support/raw_http_server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <strings.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "shared/uv/guard.h"
#include "shared/uv/handle.h"
#include "shared/uv/timer.h"

namespace corral::test {

Step send(std::string bytes) { return {Step::Kind::kSend, std::move(bytes), 0}; }
Step trickle(std::string bytes, uint64_t every_ms) {
  return {Step::Kind::kTrickle, std::move(bytes), every_ms};
}
Step wait_ms(uint64_t ms) { return {Step::Kind::kWait, {}, ms}; }
Step close_connection() { return {Step::Kind::kClose, {}, 0}; }
Step reset_connection() { return {Step::Kind::kReset, {}, 0}; }
Step raw(std::string bytes) { return {Step::Kind::kRaw, std::move(bytes), 0}; }
Step reset_stream(uint32_t code) { return {Step::Kind::kResetStream, {}, code}; }

struct RawHttpServer::SslCtx {
  SSL_CTX* ctx = nullptr;
  std::string alpn;
  bool close_in_handshake = false;
  ~SslCtx() { SSL_CTX_free(ctx); }
};

namespace {

// Connections read one at a time on a loop thread, each read consumed in its callback; one
// buffer per thread, for servers on loops of their own (harness_receiver.h).
thread_local char g_read_buf[64 * 1024];

struct WriteReq {
  uv_write_t req;
  std::string bytes;            // owned until the write callback
  std::function<void()> done;   // the protocol goes on once they are written
};

// The Content-Length of a request head, 0 when it has none.
size_t content_length(std::string_view head) {
  constexpr std::string_view kName = "\r\ncontent-length:";
  for (size_t at = head.find("\r\n"); at != std::string_view::npos;
       at = head.find("\r\n", at + 2)) {
    if (head.size() - at >= kName.size() &&
        strncasecmp(head.data() + at, kName.data(), kName.size()) == 0) {
      return std::strtoull(std::string(head.substr(at + kName.size(), 24)).c_str(), nullptr, 10);
    }
  }
  return 0;
}

// Scripted HTTP/1.1: one request at a time (the head up to "\r\n\r\n", then Content-Length
// bytes of body), each answered by playing its script before the next is read.
class H1Script final : public RawProtocol {
 public:
  H1Script(RawHttpServer& server, RawWire& wire)
      : server_(server), wire_(wire), timer_(wire.loop()) {}

  void on_bytes(const char* data, size_t n) override {
    pending_.append(data, n);
    next_request();
  }
  void on_closed() override { timer_.close(); }

 private:
  // Takes the next whole request from what was read, if any, and plays its script.
  void next_request() {
    if (playing_ || wire_.closing() || !wire_.is_open()) return;
    size_t head_end = pending_.find("\r\n\r\n");
    if (head_end == std::string::npos) return;
    size_t length = head_end + 4 + content_length(std::string_view(pending_).substr(0, head_end));
    if (pending_.size() < length) return;

    RawRequest req;
    req.connection = wire_.index();
    req.on_connection = wire_.count_request();
    req.peer = wire_.peer();
    req.bytes = pending_.substr(0, length);
    req.body = pending_.substr(head_end + 4, length - head_end - 4);
    size_t method_end = pending_.find(' ');
    size_t target_end = pending_.find(' ', method_end + 1);
    req.method = pending_.substr(0, method_end);
    req.target = pending_.substr(method_end + 1, target_end - method_end - 1);
    pending_.erase(0, length);

    script_ = server_.answer(std::move(req));
    step_ = 0;
    playing_ = true;
    play();
  }

  // Runs the script's next step; each step that waits (a write, a timer) calls back here.
  void play() {
    if (!wire_.is_open()) return;
    if (step_ == script_.size()) {
      playing_ = false;
      return next_request();  // kept alive
    }
    Step& step = script_[step_++];
    switch (step.kind) {
      case Step::Kind::kSend:
        return wire_.write(std::move(step.bytes), [this] { play(); });
      case Step::Kind::kRaw:
        return wire_.write_raw(std::move(step.bytes), [this] { play(); });
      case Step::Kind::kWait:
        return timer_.start(step.ms, 0, [this] { play(); });
      case Step::Kind::kClose:
        return wire_.shut_down();
      case Step::Kind::kReset:
      case Step::Kind::kResetStream:  // no streams here: the connection is what resets
        return wire_.reset();
      case Step::Kind::kTrickle:
        std::abort();  // expanded into sends and waits
    }
  }

  RawHttpServer& server_;
  RawWire& wire_;
  uv::Timer timer_;
  bool playing_ = false;
  std::string pending_;  // read, not yet taken as a request
  Script script_;
  size_t step_ = 0;
};

}  // namespace

Script expand(Script script) {
  Script out;
  for (Step& s : script) {
    if (s.kind != Step::Kind::kTrickle) {
      out.push_back(std::move(s));
      continue;
    }
    for (size_t i = 0; i < s.bytes.size(); ++i) {
      if (i > 0) out.push_back(wait_ms(s.ms));
      out.push_back(send(s.bytes.substr(i, 1)));
    }
  }
  return out;
}

// One accepted connection: TCP, with TLS through memory BIOs when the server has it; its plain
// bytes go to the protocol, created when the first of them come.
class RawHttpServer::Connection final : public RawWire {
 public:
  Connection(RawHttpServer& server, size_t index) : server_(server), index_(index) {
    if (!server.tls_) return;
    ssl_ = SSL_new(server.tls_->ctx);
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl_, in_, out_);
    SSL_set_accept_state(ssl_);
  }
  ~Connection() override {
    drop();
    protocol_.reset();
    if (ssl_ != nullptr) SSL_free(ssl_);
  }

  bool accept(uv_stream_t* listener) {
    uv_tcp_init(server_.loop_, tcp_.get());
    tcp_.set_live(this);
    if (uv_accept(listener, tcp_.stream()) != 0) return false;
    open_ = true;
    server_.opened();
    sockaddr_storage addr{};
    int len = sizeof addr;
    char ip[INET6_ADDRSTRLEN] = "";
    if (uv_tcp_getpeername(tcp_.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        addr.ss_family == AF_INET) {
      uv_ip4_name(reinterpret_cast<sockaddr_in*>(&addr), ip, sizeof ip);
    }
    peer_ = ip;
    return uv_read_start(tcp_.stream(), &on_alloc, &on_read) == 0;
  }

  // Closes the socket at once, whatever is still queued.
  void drop() {
    tcp_.close();
    if (!open_) return;
    open_ = false;
    if (protocol_) protocol_->on_closed();
    server_.closed();
  }

  const std::string& received() const { return received_; }
  size_t requests() const { return requests_; }

  // RawWire
  uv_loop_t* loop() const override { return server_.loop_; }
  size_t index() const override { return index_; }
  const std::string& peer() const override { return peer_; }
  bool is_open() const override { return open_; }
  bool closing() const override { return closing_; }
  size_t count_request() override { return ++requests_; }

  // A protocol's bytes: encrypted first over TLS.
  void write(std::string bytes, std::function<void()> written) override {
    if (ssl_ == nullptr) return write_raw(std::move(bytes), std::move(written));
    if (!bytes.empty()) SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
    write_raw(tls_output(), std::move(written));
  }

  // Bytes to the socket as they are.
  void write_raw(std::string bytes, std::function<void()> written) override {
    if (!open_) return;
    auto* w = new WriteReq{{}, std::move(bytes), std::move(written)};
    uv_buf_t buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
    if (uv_write(&w->req, tcp_.stream(), &buf, 1, &on_written) != 0) {
      delete w;
      drop();
    }
  }

  // FIN after the queued bytes; the socket closes when the client ends its side, so that no
  // unread byte turns the close into an RST.
  void shut_down() override {
    if (closing_ || !open_) return;
    closing_ = true;
    if (ssl_ != nullptr) {  // close_notify first, as a TLS server closes
      SSL_shutdown(ssl_);
      write_raw(tls_output(), nullptr);
    }
    auto* req = new uv_shutdown_t{};
    if (uv_shutdown(req, tcp_.stream(), [](uv_shutdown_t* r, int) { delete r; }) != 0) {
      delete req;
      drop();
    }
  }

  void reset() override {
    uv_os_fd_t fd;
    if (tcp_.live() && uv_fileno(tcp_.base(), &fd) == 0) {
      linger no_linger{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &no_linger, sizeof(no_linger));
    }
    drop();
  }

 private:
  static void on_alloc(uv_handle_t*, size_t, uv_buf_t* buf) {
    *buf = uv_buf_init(g_read_buf, sizeof(g_read_buf));
  }

  static void on_read(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
    auto* self = uv::owner_of<Connection>(stream);
    if (self == nullptr || n == 0) return;
    uv::guard("raw server read", [&] {
      if (n < 0) return self->drop();  // the client closed or reset
      if (self->ssl_ != nullptr) return self->decrypt(buf->base, static_cast<size_t>(n));
      self->plain(buf->base, static_cast<size_t>(n));
    });
  }

  void plain(const char* data, size_t n) {
    received_.append(data, n);
    if (!protocol_) {
      protocol_ = server_.protocol_for_ ? server_.protocol_for_(server_, *this)
                                        : std::make_unique<H1Script>(server_, *this);
    }
    protocol_->on_bytes(data, n);
  }

  // TLS: the bytes go through OpenSSL; the handshake runs as they come, then what they decrypt
  // to goes to the protocol.
  void decrypt(const char* data, size_t n) {
    BIO_write(in_, data, static_cast<int>(n));
    if (!SSL_is_init_finished(ssl_)) {
      if (server_.tls_->close_in_handshake) return drop();
      int rc = SSL_do_handshake(ssl_);
      write_raw(tls_output(), nullptr);
      if (rc != 1) {
        int err = SSL_get_error(ssl_, rc);
        if (err != SSL_ERROR_WANT_READ) drop();  // the client refused us, or we it
        ERR_clear_error();
        return;
      }
    }
    char text[16 * 1024];
    std::string all;
    for (;;) {
      int got = SSL_read(ssl_, text, sizeof text);
      if (got <= 0) break;
      all.append(text, static_cast<size_t>(got));
    }
    ERR_clear_error();
    std::string out = tls_output();
    if (!out.empty()) write_raw(std::move(out), nullptr);
    if (!all.empty() && open_) plain(all.data(), all.size());
  }

  // What OpenSSL has to send.
  std::string tls_output() {
    char bytes[16 * 1024];
    std::string all;
    int got;
    while ((got = BIO_read(out_, bytes, sizeof bytes)) > 0) all.append(bytes, static_cast<size_t>(got));
    return all;
  }

  static void on_written(uv_write_t* req, int status) {
    std::unique_ptr<WriteReq> w(reinterpret_cast<WriteReq*>(req));
    auto* self = uv::owner_of<Connection>(req->handle);
    if (self == nullptr) return;
    uv::guard("raw server write", [&] {
      if (status != 0) return self->drop();  // the client went away
      if (w->done) w->done();
    });
  }

  RawHttpServer& server_;
  size_t index_;
  SSL* ssl_ = nullptr;  // over TLS, with its memory BIOs (owned by it)
  BIO* in_ = nullptr;
  BIO* out_ = nullptr;
  std::string peer_;
  uv::Handle<uv_tcp_t> tcp_;
  bool open_ = false;
  bool closing_ = false;  // FIN sent: no further request is answered
  std::string received_;
  size_t requests_ = 0;
  std::unique_ptr<RawProtocol> protocol_;  // last: it goes first
};

RawHttpServer::RawHttpServer(uv_loop_t* loop, ScriptFor script_for)
    : loop_(loop), script_for_(std::move(script_for)) {
  auto listener = uv::Listener::tcp(loop, "127.0.0.1", 0,
                                    [this](uv::Listener&, int status) { on_connection(status); });
  if (!listener) {
    std::fprintf(stderr, "raw HTTP server: %s\n", listener.status().message().c_str());
    std::abort();
  }
  listener_ = std::move(*listener);
  port_ = listener_->port();
}

RawHttpServer::RawHttpServer(uv_loop_t* loop, ScriptFor script_for, const TlsServerOptions& tls)
    : RawHttpServer(loop, std::move(script_for), nullptr, &tls) {}

RawHttpServer::RawHttpServer(uv_loop_t* loop, ScriptFor script_for, ProtocolFor protocol,
                             const TlsServerOptions* options)
    : RawHttpServer(loop, std::move(script_for)) {
  protocol_for_ = std::move(protocol);
  if (options == nullptr) return;
  const TlsServerOptions& tls = *options;
  tls_ = std::make_shared<SslCtx>();
  tls_options_ = tls;
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  tls_->ctx = ctx;
  tls_->alpn = tls.alpn;
  tls_->close_in_handshake = tls.close_in_handshake;
  bool ok = SSL_CTX_use_certificate_chain_file(ctx, tls.cert.c_str()) == 1 &&
            SSL_CTX_use_PrivateKey_file(ctx, tls.key.c_str(), SSL_FILETYPE_PEM) == 1;
  if (ok && !tls.client_ca.empty()) {
    ok = SSL_CTX_load_verify_locations(ctx, tls.client_ca.c_str(), nullptr) == 1;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  if (tls.min_version != 0) SSL_CTX_set_min_proto_version(ctx, tls.min_version);
  if (tls.max_version != 0) SSL_CTX_set_max_proto_version(ctx, tls.max_version);
  SSL_CTX_set_alpn_select_cb(
      ctx,
      [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
         unsigned inlen, void* arg) -> int {
        const std::string& want = static_cast<SslCtx*>(arg)->alpn;
        for (unsigned i = 0; i < inlen; i += 1u + in[i]) {
          if (std::string(reinterpret_cast<const char*>(in + i + 1), in[i]) == want) {
            *out = in + i + 1;
            *outlen = in[i];
            return SSL_TLSEXT_ERR_OK;
          }
        }
        return SSL_TLSEXT_ERR_NOACK;
      },
      tls_.get());
  if (!ok) {
    std::fprintf(stderr, "raw HTTP server: cannot load %s / %s\n", tls.cert.c_str(),
                 tls.key.c_str());
    std::abort();
  }
}

RawHttpServer::~RawHttpServer() { close(); }

void RawHttpServer::close() {
  if (listener_) listener_->close();
  for (auto& c : connections_) c->drop();
}

std::string RawHttpServer::url(std::string_view path) const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) +
         std::string(path);
}

size_t RawHttpServer::connections() const { return connections_.size(); }
const std::string& RawHttpServer::received(size_t index) const {
  return connections_.at(index)->received();
}
size_t RawHttpServer::requests_on(size_t index) const { return connections_.at(index)->requests(); }

void RawHttpServer::on_connection(int status) {
  if (status != 0) return;
  auto c = std::make_unique<Connection>(*this, connections_.size());
  bool ok = c->accept(listener_->raw());
  connections_.push_back(std::move(c));
  if (!ok) connections_.back()->drop();
}

void RawHttpServer::opened() {
  ++open_;
  peak_open_ = std::max(peak_open_, open_);
}

void RawHttpServer::closed() { --open_; }

Script RawHttpServer::answer(RawRequest req) {
  requests_.push_back(std::move(req));
  return expand(script_for_(requests_.back()));
}

}  // namespace corral::test
