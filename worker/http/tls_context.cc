#include "worker/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/x509.h>

#include "worker/http/tls_session.h"

namespace corral::worker::tls {

std::string openssl_error() {
  unsigned long e = ERR_peek_error();
  std::string words;
  if (e != 0) {
    const char* reason = ERR_reason_error_string(e);
    words = reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(e));
  }
  ERR_clear_error();
  return words;
}

Context::Context(SSL_CTX* ctx, http::TlsOptions options)
    : ctx_(ctx), options_(std::move(options)) {}

Context::~Context() {
  for (auto& [peer, s] : sessions_) SSL_SESSION_free(s);
  SSL_CTX_free(ctx_);
}

SSL_SESSION* Context::session(const std::string& peer) const {
  auto it = sessions_.find(peer);
  return it == sessions_.end() ? nullptr : it->second;
}

void Context::keep(const std::string& peer, SSL_SESSION* s) {
  // One per peer; a scenario that reaches a host per instance would otherwise grow this for
  // ever: past the cap, sessions of other peers are dropped (they cost a full handshake).
  constexpr size_t kMaxPeers = 4096;
  auto it = sessions_.find(peer);
  if (it != sessions_.end()) {
    SSL_SESSION_free(it->second);
    it->second = s;
    return;
  }
  if (sessions_.size() >= kMaxPeers) {
    SSL_SESSION_free(sessions_.begin()->second);
    sessions_.erase(sessions_.begin());
  }
  sessions_.emplace(peer, s);
}

Contexts::~Contexts() {
  contexts_.clear();
  for (auto& [file, s] : stores_) X509_STORE_free(s);
}

Result<X509_STORE*> Contexts::store(const std::optional<std::string>& ca_file) {
  const std::string key = ca_file.value_or("");
  if (auto it = stores_.find(key); it != stores_.end()) return it->second;
  X509_STORE* s = X509_STORE_new();
  if (s == nullptr) return Status(Code::kResourceExhausted, "X509_STORE_new() failed");
  ERR_clear_error();
  int ok = ca_file ? X509_STORE_load_file(s, ca_file->c_str()) : X509_STORE_set_default_paths(s);
  if (ok != 1) {
    std::string why = openssl_error();
    X509_STORE_free(s);
    if (!ca_file) return io_error("cannot read the system's CA certificates: " + why);
    return invalid_argument("tls.ca_file " + *ca_file + ": not a file of PEM certificates (" + why +
                            ")");
  }
  stores_.emplace(key, s);
  return s;
}

Result<Context*> Contexts::context(const http::TlsOptions& o, uint64_t now_ms) {
  const std::string key = o.key();
  if (auto it = contexts_.find(key); it != contexts_.end()) return it->second.get();
  if (auto it = failed_.find(key); it != failed_.end()) {
    if (now_ms - it->second.at_ms < kRetryFailedMs) return it->second.why;
    failed_.erase(it);
  }
  auto made = make(o);
  if (!made) {
    failed_[key] = Failed{made.status(), now_ms};
    return made.status();
  }
  Context* c = made->get();
  contexts_.emplace(key, std::move(*made));
  return c;
}

Result<std::unique_ptr<Context>> Contexts::make(const http::TlsOptions& o) {
  if (Status s = http::check_tls_files(o, "tls"); !s) return s;
  auto ca = store(o.ca_file);
  if (!ca) return ca.status();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Status(Code::kResourceExhausted, "SSL_CTX_new() failed");
  auto c = std::make_unique<Context>(ctx, o);  // frees ctx on every path below
  SSL_CTX_set_min_proto_version(ctx, o.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION);
  // An idle connection gives its read and write buffers (about 2 x 17 KB) back.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  X509_STORE_up_ref(*ca);
  SSL_CTX_set_cert_store(ctx, *ca);
  if (o.client_cert) {
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(ctx, o.client_cert->c_str()) != 1) {
      return invalid_argument("tls.client_cert " + *o.client_cert + ": not a PEM certificate (" +
                              openssl_error() + ")");
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, o.client_key->c_str(), SSL_FILETYPE_PEM) != 1) {
      return invalid_argument("tls.client_key " + *o.client_key + ": not a PEM private key (" +
                              openssl_error() + ")");
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return invalid_argument("tls.client_key " + *o.client_key +
                              " does not match the certificate of tls.client_cert " +
                              *o.client_cert);
    }
  }
  Session::prepare(*c);
  return c;
}

}  // namespace corral::worker::tls
