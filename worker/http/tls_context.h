// The TLS contexts of one worker (OpenSSL 3): CA stores and client SSL_CTXs, each made on first
// use and kept for the worker's life. Reading the system's CA bundle costs about 45 ms and a new
// SSL_CTX about 0.3 ms on the 2-core machine; libcurl's OpenSSL backend does both for every new
// connection unless it is handed a store (which is what starved the worker's loop at thousands
// of new https connections). Here a connection costs an SSL_new (about 1 us) and its handshake.
// Loop thread only.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "shared/http/tls_options.h"
#include "shared/status.h"

namespace corral::worker::tls {

// One SSL_CTX for one set of options, with the sessions servers gave it, by peer, so that a new
// connection to a peer resumes (TLS 1.3 tickets, TLS 1.2 session tickets) instead of a full
// handshake.
class Context {
 public:
  Context(SSL_CTX* ctx, http::TlsOptions options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  SSL_CTX* get() const { return ctx_; }
  const http::TlsOptions& options() const { return options_; }
  bool verify() const { return options_.verify.value_or(true); }
  // The newest session for `peer` ("host:port name"), borrowed; nullptr when none.
  SSL_SESSION* session(const std::string& peer) const;
  // Keeps `s` (its reference is taken over) as the newest session for `peer`.
  void keep(const std::string& peer, SSL_SESSION* s);

 private:
  SSL_CTX* ctx_;
  http::TlsOptions options_;
  std::unordered_map<std::string, SSL_SESSION*> sessions_;
};

class Contexts {
 public:
  Contexts() = default;
  ~Contexts();
  Contexts(const Contexts&) = delete;
  Contexts& operator=(const Contexts&) = delete;

  // The CA store for `ca_file` (nullopt: the system's, as OpenSSL finds it: SSL_CERT_FILE and
  // SSL_CERT_DIR, else /usr/lib/ssl). Borrowed: it lives as long as this object. Fails with the
  // file named when it cannot be read as PEM certificates.
  Result<X509_STORE*> store(const std::optional<std::string>& ca_file);
  // The context for `o`. A failure (an unreadable CA file, a client key readable by others, a
  // key that does not match its certificate) is remembered for kRetryFailedMs, so that
  // thousands of requests do not read the same bad file again.
  Result<Context*> context(const http::TlsOptions& o, uint64_t now_ms);

  static constexpr uint64_t kRetryFailedMs = 10000;

 private:
  Result<std::unique_ptr<Context>> make(const http::TlsOptions& o);

  std::map<std::string, X509_STORE*> stores_;
  std::unordered_map<std::string, std::unique_ptr<Context>> contexts_;
  struct Failed {
    Status why;
    uint64_t at_ms;
  };
  std::unordered_map<std::string, Failed> failed_;
};

// The first error in OpenSSL's queue of this thread, in its words, and the queue cleared; ""
// when it is empty.
std::string openssl_error();

}  // namespace corral::worker::tls
