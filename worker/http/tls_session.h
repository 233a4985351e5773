// One TLS client connection as a state machine (OpenSSL driven through a BIO of its own, which
// reads from the bytes it is handed and writes into a string): bytes from the peer go in;
// plaintext and bytes to send come out. It never touches a socket, so its caller decides when
// the costly steps (the handshake) run, and it can be fuzzed with bytes alone.
//
// Certificates are verified against the context's CA store, and the name against the URL's
// host (or tls.server_name); SNI is sent for a name, never for an IP address. Failures are
// said in words a user can act on (error()); the caller adds the origin:
//   certificate verify failed: self-signed certificate
//   hostname mismatch: certificate is for api.internal, not 127.0.0.1
//   certificate expired on 2026-11-01
//   handshake failed: no shared protocol version
// Loop thread only.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "shared/status.h"
#include "worker/http/tls_context.h"

namespace corral::worker::tls {

class Session {
 public:
  // A session to `host`:`port` in `ctx`, resuming the newest session `ctx` holds for that peer.
  // ALPN offers "h2" first when `offer_h2`, then "http/1.1". `ctx` must outlive the session.
  static Result<std::unique_ptr<Session>> make(Context& ctx, const std::string& host, uint16_t port,
                                               bool offer_h2);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Installs on a new context the callbacks its sessions rely on (verification in words,
  // sessions kept for resumption).
  static void prepare(Context& ctx);

  // Keeps bytes from the peer (copied) for the next handshake() or read().
  void stash(const char* data, size_t n);

  enum class Progress { kMore, kDone, kFailed };
  // Runs the handshake as far as the bytes stashed allow, appending what must be sent to `out`.
  // kMore: it waits for more bytes from the peer. Bytes past the handshake stay stashed.
  Progress handshake(std::string& out);

  enum class Read { kMore, kClosed, kFailed };
  // Plaintext, one record at a time; false stops reading (the rest stays stashed).
  using Sink = std::function<bool(const char* data, size_t n)>;
  // After the handshake: decrypts what is stashed, then `in`, and hands the plaintext to
  // `sink`; appends what must be sent (alerts, key updates) to `out`. kMore: everything was
  // used, or the sink stopped; kClosed: the peer sent close_notify; kFailed: error().
  Read read(const char* in, size_t n, const Sink& sink, std::string& out);
  // Encrypts `data` (in one record when it fits) into `out`. False on failure (error()).
  bool write(const char* data, size_t n, std::string& out);
  // OpenSSL keeps its read buffer (about 17 KB) after a read. A session told to gives it back
  // after each read that leaves no record part read: for a connection that mostly waits, as a
  // held one does. Others keep it between reads (a busy connection would allocate it again at
  // once) and give it back with release_buffers() when they go idle.
  void release_after_read(bool on) { release_after_read_ = on; }
  // Gives back the read buffer unless a record is part read.
  void release_buffers() { SSL_free_buffers(ssl_); }
  // Whether part of a record is held: the peer's close now cuts that record short. (OpenSSL's
  // SSL_has_pending() does not count a record whose header it has parsed, so the session
  // follows the record headers of what it hands OpenSSL: their length field, nothing more.)
  bool mid_record() const { return header_got_ > 0 || body_left_ > 0; }

  const std::string& error() const { return error_; }
  bool resumed() const { return SSL_session_reused(ssl_) == 1; }
  bool h2() const;
  // "TLSv1.3", "TLSv1.2".
  const char* version() const { return SSL_get_version(ssl_); }

 private:
  Session(Context& ctx, SSL* ssl, std::string name, std::string peer);
  static int bio_read(BIO* b, char* buf, int len);
  static int bio_write(BIO* b, const char* buf, int len);
  static long bio_ctrl(BIO* b, int cmd, long num, void* ptr);
  static int on_verify(int ok, X509_STORE_CTX* store);
  static int on_new_session(SSL* ssl, SSL_SESSION* s);
  // Turns the state after a failed call into error_.
  void fail(bool handshaking);
  std::string describe(bool handshaking) const;
  void keep_rest();
  void follow_records(const char* data, size_t n);

  Context& ctx_;
  SSL* ssl_;
  std::string name_;  // the name verified: tls.server_name or the URL's host
  std::string peer_;  // the key of this peer's sessions in ctx_
  std::string stash_;
  size_t stash_used_ = 0;
  const char* in_ = nullptr;  // the bytes of the call in progress
  size_t in_left_ = 0;
  std::string* out_ = nullptr;
  std::string error_;
  // Where the peer's bytes are in their record framing (follow_records).
  unsigned char header_[5] = {};
  size_t header_got_ = 0;
  size_t body_left_ = 0;
  // The first certificate the verification refused, as words for describe().
  long verify_error_ = 0;
  bool release_after_read_ = false;
  std::string cert_names_;
  std::string not_before_, not_after_;
};

}  // namespace corral::worker::tls
