#include "worker/http/tls_session.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <ctime>

namespace corral::worker::tls {
namespace {

// Plaintext of one record at a time, for every session of the loop: the sink consumes it
// before the next record is read.
char g_plain[16 * 1024];

bool is_ip(const std::string& s) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

BIO_METHOD* bio_method(int (*rd)(BIO*, char*, int), int (*wr)(BIO*, const char*, int),
                       long (*ctrl)(BIO*, int, long, void*)) {
  static BIO_METHOD* m = [&] {
    BIO_METHOD* made = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "corral loop");
    BIO_meth_set_read(made, rd);
    BIO_meth_set_write(made, wr);
    BIO_meth_set_ctrl(made, ctrl);
    return made;
  }();
  return m;
}

std::string day_of(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return "an unknown date";
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// The names a certificate is for: its subjectAltName DNS names and IP addresses, else its CN.
std::string names_of(X509* cert) {
  std::string out;
  int shown = 0, more = 0;
  auto add = [&](const std::string& n) {
    if (shown == 3) {
      ++more;
      return;
    }
    out += (shown++ == 0 ? "" : ", ") + n;
  };
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
    if (g->type == GEN_DNS) {
      const ASN1_STRING* s = g->d.dNSName;
      add(std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                      static_cast<size_t>(ASN1_STRING_length(s))));
    } else if (g->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = g->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = "";
      int family = ASN1_STRING_length(ip) == 4 ? AF_INET : AF_INET6;
      if (inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof text) != nullptr) add(text);
    }
  }
  GENERAL_NAMES_free(names);
  if (shown == 0) {
    char cn[256] = "";
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn) > 0) {
      add(cn);
    }
  }
  if (more > 0) out += " and " + std::to_string(more) + " more";
  return shown == 0 ? "no name" : out;
}

}  // namespace

Session::Session(Context& ctx, SSL* ssl, std::string name, std::string peer)
    : ctx_(ctx), ssl_(ssl), name_(std::move(name)), peer_(std::move(peer)) {}

// A connection's end is no reason to forget its session: OpenSSL would mark it not resumable
// when freed without a shutdown, so the shutdown is recorded as done. (A fatal TLS error has
// already taken the session out of use.)
Session::~Session() {
  SSL_set_app_data(ssl_, nullptr);
  SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_free(ssl_);  // frees the BIO too
}

Result<std::unique_ptr<Session>> Session::make(Context& ctx, const std::string& host, uint16_t port,
                                               bool offer_h2) {
  SSL* ssl = SSL_new(ctx.get());
  BIO* bio = BIO_new(bio_method(&Session::bio_read, &Session::bio_write, &Session::bio_ctrl));
  if (ssl == nullptr || bio == nullptr) {
    SSL_free(ssl);
    BIO_free(bio);
    return Status(Code::kResourceExhausted, "cannot make a TLS session: " + openssl_error());
  }
  std::string name = ctx.options().server_name.value_or(host);
  std::string peer = host + ":" + std::to_string(port) + " " + name;
  std::unique_ptr<Session> s(new Session(ctx, ssl, name, std::move(peer)));
  BIO_set_data(bio, s.get());
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);
  SSL_set_app_data(ssl, s.get());
  SSL_set_connect_state(ssl);
  bool ip = is_ip(name);
  if (ctx.verify()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    if (ok != 1) return invalid_argument("tls: \"" + name + "\" is not a host name to verify");
  }
  if (!ip) SSL_set_tlsext_host_name(ssl, name.c_str());  // RFC 6066: never an IP address
  static const unsigned char kH2[] = "\x02h2\x08http/1.1";
  static const unsigned char kHttp11[] = "\x08http/1.1";
  if (offer_h2) {
    SSL_set_alpn_protos(ssl, kH2, sizeof kH2 - 1);
  } else {
    SSL_set_alpn_protos(ssl, kHttp11, sizeof kHttp11 - 1);
  }
  if (SSL_SESSION* prior = ctx.session(s->peer_)) SSL_set_session(ssl, prior);
  return s;
}

void Session::prepare(Context& ctx) {
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_verify(c, ctx.verify() ? SSL_VERIFY_PEER : SSL_VERIFY_NONE,
                     ctx.verify() ? &Session::on_verify : nullptr);
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(c, &Session::on_new_session);
}

void Session::stash(const char* data, size_t n) { stash_.append(data, n); }

Session::Progress Session::handshake(std::string& out) {
  out_ = &out;
  ERR_clear_error();
  int rc = SSL_do_handshake(ssl_);
  out_ = nullptr;
  if (rc == 1) {
    keep_rest();
    SSL_free_buffers(ssl_);  // the handshake's buffers, now empty
    return Progress::kDone;
  }
  if (SSL_get_error(ssl_, rc) == SSL_ERROR_WANT_READ) return Progress::kMore;
  fail(true);
  return Progress::kFailed;
}

Session::Read Session::read(const char* in, size_t n, const Sink& sink, std::string& out) {
  in_ = in;
  in_left_ = n;
  out_ = &out;
  ERR_clear_error();
  Read result = Read::kMore;
  for (;;) {
    int got = SSL_read(ssl_, g_plain, sizeof g_plain);
    if (got > 0) {
      if (!sink(g_plain, static_cast<size_t>(got))) break;
      // Every byte handed over is read and no record is part read: another call would only
      // set up a read buffer to find nothing (and a record is at most sizeof g_plain).
      if (in_left_ == 0 && stash_used_ == stash_.size() && SSL_pending(ssl_) == 0) {
        if (release_after_read_) release_buffers();
        break;
      }
      continue;
    }
    int err = SSL_get_error(ssl_, got);
    if (err == SSL_ERROR_WANT_READ) {
      // The read buffer stays allocated after a read (SSL_MODE_RELEASE_BUFFERS does not give
      // it back in every case): bench/tls measured 27.5 KB a held connection with it, 17 KB
      // without.
      if (release_after_read_) release_buffers();
      break;
    }
    if (err == SSL_ERROR_ZERO_RETURN) {
      result = Read::kClosed;
    } else {
      fail(false);
      result = Read::kFailed;
    }
    break;
  }
  keep_rest();
  out_ = nullptr;
  return result;
}

bool Session::write(const char* data, size_t n, std::string& out) {
  if (n == 0) return true;
  out_ = &out;
  ERR_clear_error();
  int rc = SSL_write(ssl_, data, static_cast<int>(n));
  out_ = nullptr;
  if (rc > 0 && static_cast<size_t>(rc) == n) return true;
  fail(false);
  return false;
}

bool Session::h2() const {
  const unsigned char* p = nullptr;
  unsigned len = 0;
  SSL_get0_alpn_selected(ssl_, &p, &len);
  return len == 2 && std::memcmp(p, "h2", 2) == 0;
}

// Bytes of the call in progress that OpenSSL did not read wait in the stash; a stash used up is
// freed, so that an idle connection holds none.
void Session::keep_rest() {
  if (stash_used_ == stash_.size()) {
    std::string().swap(stash_);
    stash_used_ = 0;
  }
  if (in_left_ > 0) stash_.append(in_, in_left_);
  in_ = nullptr;
  in_left_ = 0;
}

int Session::bio_read(BIO* b, char* buf, int len) {
  auto* s = static_cast<Session*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  size_t want = static_cast<size_t>(len), got = 0;
  if (s->stash_used_ < s->stash_.size()) {
    got = std::min(want, s->stash_.size() - s->stash_used_);
    std::memcpy(buf, s->stash_.data() + s->stash_used_, got);
    s->stash_used_ += got;
  }
  if (got < want && s->in_left_ > 0) {
    size_t more = std::min(want - got, s->in_left_);
    std::memcpy(buf + got, s->in_, more);
    s->in_ += more;
    s->in_left_ -= more;
    got += more;
  }
  if (got == 0) {
    BIO_set_retry_read(b);
    return -1;
  }
  s->follow_records(buf, got);
  return static_cast<int>(got);
}

// A record is a 5-byte header (type, version, 16-bit length) and that many bytes.
void Session::follow_records(const char* data, size_t n) {
  while (n > 0) {
    if (body_left_ > 0) {
      size_t k = std::min(n, body_left_);
      body_left_ -= k;
      data += k;
      n -= k;
      continue;
    }
    header_[header_got_++] = static_cast<unsigned char>(*data++);
    --n;
    if (header_got_ == sizeof header_) {
      body_left_ = (size_t{header_[3]} << 8) | header_[4];
      header_got_ = 0;
    }
  }
}

int Session::bio_write(BIO* b, const char* buf, int len) {
  auto* s = static_cast<Session*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  if (s->out_ != nullptr) s->out_->append(buf, static_cast<size_t>(len));
  return len;  // outside a call (SSL_free's close_notify): nobody sends it
}

long Session::bio_ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int Session::on_verify(int ok, X509_STORE_CTX* store) {
  if (ok == 1) return 1;
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* s = ssl != nullptr ? static_cast<Session*>(SSL_get_app_data(ssl)) : nullptr;
  if (s != nullptr && s->verify_error_ == 0) {
    s->verify_error_ = X509_STORE_CTX_get_error(store);
    if (X509* cert = X509_STORE_CTX_get_current_cert(store)) {
      s->cert_names_ = names_of(cert);
      s->not_before_ = day_of(X509_get0_notBefore(cert));
      s->not_after_ = day_of(X509_get0_notAfter(cert));
    }
  }
  return 0;
}

int Session::on_new_session(SSL* ssl, SSL_SESSION* sess) {
  auto* s = static_cast<Session*>(SSL_get_app_data(ssl));
  if (s == nullptr) return 0;
  s->ctx_.keep(s->peer_, sess);
  return 1;  // the reference is kept
}

void Session::fail(bool handshaking) {
  error_ = describe(handshaking);
  ERR_clear_error();
}

std::string Session::describe(bool handshaking) const {
  switch (verify_error_) {
    case 0:
      break;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return "hostname mismatch: certificate is for " + cert_names_ + ", not " + name_;
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return "certificate expired on " + not_after_;
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return "certificate not valid before " + not_before_;
    default:
      return std::string("certificate verify failed: ") +
             X509_verify_cert_error_string(verify_error_);
  }
  unsigned long e = ERR_peek_error();
  const char* reason = ERR_reason_error_string(e);
  std::string words = reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(e));
  switch (ERR_GET_REASON(e)) {
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
    case SSL_R_NO_PROTOCOLS_AVAILABLE:
      return "handshake failed: no shared protocol version";
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_HTTP_REQUEST:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
      if (handshaking) {
        return "handshake failed: the server did not answer in TLS (a plain http:// port?)";
      }
      break;
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return "the server requires a client certificate (tls.client_cert and tls.client_key)";
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
      return "the server refused the client certificate: " + words;
    case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
      return "handshake failed: the server refused it (handshake failure alert: no shared "
             "cipher or group, or it wants a client certificate)";
    case SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC:
      return "a TLS record failed its integrity check (bad record MAC)";
    default:
      break;
  }
  if (e == 0) words = "unexpected state";
  return (handshaking ? "handshake failed: " : "TLS error: ") + words;
}

}  // namespace corral::worker::tls
