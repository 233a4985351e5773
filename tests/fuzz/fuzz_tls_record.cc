// Fuzz target: the read side of the lean client's TLS (worker/http/tls_session.h): records from
// the peer, once the handshake is done, fed through the session's own BIO.
//
// Each input does a handshake, in memory, between a tls::Session and an OpenSSL server with the
// fixed test key below (TLS 1.3 or 1.2, as byte 0 says). Then the server encrypts the input's
// plaintext, a record per piece, and the input damages what goes on the wire or not:
//   byte 0  bit 0: TLS 1.2 instead of 1.3; bits 1-7: the size of the pieces fed to read()
//   byte 1  what is done to the records: 0-63 nothing, 64-127 one byte flipped, 128-191 cut at
//           a point, 192-223 garbage inserted, 224-255 close_notify after the records
//   byte 2  where (a fraction of the records' length, /255)
//   rest    the plaintext, cut into records of 1 to 64 bytes (each record's length from its
//           own first byte)
// Checks: intact records give back exactly the plaintext (and kClosed after close_notify);
// damaged ones give back a prefix of it, never more, and a failure always says why; a record
// cut short leaves mid_record() set; nothing ever reads past what was fed.
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/fuzz/check.h"
#include "worker/http/tls_context.h"
#include "worker/http/tls_session.h"

namespace {

using corral::worker::tls::Context;
using corral::worker::tls::Contexts;
using corral::worker::tls::Session;

// A throwaway key and certificate for this target only (CN=fuzz.corral.test).
constexpr const char* kKey = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg+pxu2IWt0qL4Y76Q
9tohAN2tOMya0IERTZ0houx5IPyhRANCAARL0e6Mysew8tSk0ZQcMy4aRdscxBnI
Z/YCcvU6RSQU3UDabE2i5/GhBWv04PBV/26gapClIqTqTFL3+xjKHfBt
-----END PRIVATE KEY-----
)";
constexpr const char* kCert = R"(-----BEGIN CERTIFICATE-----
MIIBjTCCATOgAwIBAgIUaVV6lt0Nfwkk99TJYyhxmNiqQeAwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQZnV6ei5jb3JyYWwudGVzdDAgFw0yNjEyMDQxODI3NDdaGA8y
MTI2MTExMDE4Mjc0N1owGzEZMBcGA1UEAwwQZnV6ei5jb3JyYWwudGVzdDBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABEvR7ozKx7Dy1KTRlBwzLhpF2xzEGchn9gJy
9TpFJBTdQNpsTaLn8aEFa/Tg8FX/bqBqkKUipOpMUvf7GMod8G2jUzBRMB0GA1Ud
DgQWBBSXWrbZEW9y4LX3GyfRQOn45NMgbTAfBgNVHSMEGDAWgBSXWrbZEW9y4LX3
GyfRQOn45NMgbTAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIBmi
JUZFNjlNHpjjlD85670sSOa2uU6ICrbtnKsk0ESXAiEAlbBanqMC2OvYtQBiAmK9
kBpDYNV0+A3RU2Por7vogxY=
-----END CERTIFICATE-----
)";

SSL_CTX* server_ctx(bool tls12) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  BIO* kb = BIO_new_mem_buf(kKey, -1);
  BIO* cb = BIO_new_mem_buf(kCert, -1);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  FUZZ_CHECK(key != nullptr && cert != nullptr);
  FUZZ_CHECK(SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1);
  if (tls12) SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
  EVP_PKEY_free(key);
  X509_free(cert);
  BIO_free(kb);
  BIO_free(cb);
  return ctx;
}

struct Server {
  SSL* ssl;
  BIO* in;
  BIO* out;
  explicit Server(SSL_CTX* ctx)
      : ssl(SSL_new(ctx)), in(BIO_new(BIO_s_mem())), out(BIO_new(BIO_s_mem())) {
    SSL_set_bio(ssl, in, out);
    SSL_set_accept_state(ssl);
  }
  ~Server() { SSL_free(ssl); }
  std::string drain() {
    std::string bytes;
    char buf[4096];
    int n;
    while ((n = BIO_read(out, buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
    return bytes;
  }
};

// Both sides, handshaken; false when the handshake did not finish (it always should).
bool handshake(Session& client, Server& server) {
  std::string to_server;
  for (int round = 0; round < 8; ++round) {
    to_server.clear();
    Session::Progress p = client.handshake(to_server);
    FUZZ_CHECK(p != Session::Progress::kFailed);
    BIO_write(server.in, to_server.data(), static_cast<int>(to_server.size()));
    SSL_do_handshake(server.ssl);
    std::string back = server.drain();
    if (p == Session::Progress::kDone && back.empty()) return SSL_is_init_finished(server.ssl);
    client.stash(back.data(), back.size());
  }
  return false;
}

Contexts& contexts() {
  static auto* c = new Contexts();
  return *c;
}

// A full handshake costs milliseconds under the sanitizers: every input after the first of its
// TLS version resumes a session kept from then (TLS 1.2: no key exchange at all; TLS 1.3: one
// X25519), put back before each connection since a damaged one marks its own not resumable.
void resume_from(Context& ctx, const std::string& peer, SSL_SESSION*& kept) {
  if (kept != nullptr) {
    ctx.keep(peer, SSL_SESSION_dup(kept));
    return;
  }
  SSL_SESSION* s = ctx.session(peer);
  if (s != nullptr && SSL_SESSION_is_resumable(s) == 1) kept = SSL_SESSION_dup(s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const bool tls12 = data[0] & 1;
  const size_t piece = 1 + (data[0] >> 1);
  const uint8_t damage = data[1];
  const double where = data[2] / 255.0;
  static SSL_CTX* ctx13 = server_ctx(false);
  static SSL_CTX* ctx12 = server_ctx(true);
  corral::http::TlsOptions options;
  options.verify = false;
  auto ctx = contexts().context(options, 0);
  FUZZ_CHECK(ctx.is_ok());
  static SSL_SESSION* kept[2] = {nullptr, nullptr};
  const std::string host = tls12 ? "fuzz12.corral.test" : "fuzz13.corral.test";
  resume_from(**ctx, host + ":443 " + host, kept[tls12]);
  auto made = Session::make(**ctx, host, 443, false);
  FUZZ_CHECK(made.is_ok());
  Session& client = **made;
  Server server(tls12 ? ctx12 : ctx13);
  FUZZ_CHECK(handshake(client, server));

  // The plaintext, a record per piece; where each record ends on the wire, and the plaintext
  // before it.
  std::string plain, wire;
  std::vector<std::pair<size_t, size_t>> ends;  // (wire bytes, plaintext bytes)
  for (size_t at = 3; at < size;) {
    size_t len = std::min<size_t>(1 + data[at] % 64, size - at);
    SSL_write(server.ssl, data + at, static_cast<int>(len));
    plain.append(reinterpret_cast<const char*>(data) + at, len);
    wire += server.drain();
    ends.emplace_back(wire.size(), plain.size());
    at += len;
  }
  const bool closes = damage >= 224;
  if (closes) {
    SSL_shutdown(server.ssl);
    wire += server.drain();
  }
  const size_t point = static_cast<size_t>(where * static_cast<double>(wire.size()));
  const bool intact = damage < 64 || closes;
  const bool cut = damage >= 128 && damage < 192;
  if (damage >= 64 && damage < 128 && point < wire.size()) wire[point] ^= 0x5a;
  if (cut) wire.resize(point);
  if (damage >= 192 && damage < 224) wire.insert(point, "\x17\x03\x03\x00\x05junk!", 10);

  std::string got, out;
  Session::Read last = Session::Read::kMore;
  for (size_t at = 0; at < wire.size() && last == Session::Read::kMore; at += piece) {
    std::string_view part = std::string_view(wire).substr(at, piece);
    last = client.read(
        part.data(), part.size(),
        [&](const char* p, size_t n) {
          got.append(p, n);
          return true;
        },
        out);
  }
  FUZZ_CHECK(got.size() <= plain.size());
  FUZZ_CHECK(plain.compare(0, got.size(), got) == 0);  // a prefix, never other bytes
  if (last == Session::Read::kFailed) FUZZ_CHECK(!client.error().empty());
  if (intact) {
    FUZZ_CHECK(got == plain);
    FUZZ_CHECK(last == (closes ? Session::Read::kClosed : Session::Read::kMore));
  }
  if (cut && last == Session::Read::kMore) {
    // Cut between records: exactly the records before; inside one: that record is held.
    size_t whole = 0;
    bool at_end = point == 0;
    for (const auto& [wire_end, plain_end] : ends) {
      if (wire_end <= point) whole = plain_end;
      at_end = at_end || wire_end == point;
    }
    FUZZ_CHECK(got.size() == whole);
    FUZZ_CHECK(client.mid_record() == !at_end);
  }
  ERR_clear_error();
  return 0;
}
