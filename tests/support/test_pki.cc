#include "tests/support/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <vector>

namespace corral::test {
namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "test_pki: %s failed\n", what);
  std::abort();
}

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

Key ec_key() { return Key(EVP_EC_gen("P-256"), &EVP_PKEY_free); }
Key rsa_key() { return Key(EVP_RSA_gen(2048), &EVP_PKEY_free); }

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr || X509_add_ext(cert, ext, -1) != 1) die("X509_add_ext");
  X509_EXTENSION_free(ext);
}

struct Spec {
  std::string cn;
  std::string sans;  // "DNS:localhost,IP:127.0.0.1", or "" for a CA
  bool ca = false;
  long from_s = -3600;  // valid from now + from_s
  long until_s = 86400L * 30;
};

// A certificate for `key` as `spec` says, signed by `issuer_key` as `issuer` (itself when
// `issuer` is null).
Cert make_cert(EVP_PKEY* key, const Spec& spec, X509* issuer, EVP_PKEY* issuer_key) {
  static long serial = 1000;
  Cert cert(X509_new(), &X509_free);
  X509* c = cert.get();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), ++serial);
  X509_gmtime_adj(X509_getm_notBefore(c), spec.from_s);
  X509_gmtime_adj(X509_getm_notAfter(c), spec.until_s);
  X509_set_pubkey(c, key);
  X509_NAME* name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("corral tests"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(c, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer != nullptr ? issuer : c;
  add_ext(c, signer, NID_subject_key_identifier, "hash");
  add_ext(c, signer, NID_authority_key_identifier, "keyid:always");
  if (spec.ca) {
    add_ext(c, signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(c, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(c, signer, NID_basic_constraints, "CA:FALSE");
    add_ext(c, signer, NID_subject_alt_name, spec.sans);
  }
  if (X509_sign(c, issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    die("X509_sign");
  }
  return cert;
}

void write_key(const std::string& path, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr || PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    die("writing a key");
  }
  std::fclose(f);
  ::chmod(path.c_str(), 0600);
}

void write_certs(const std::string& path, const std::vector<X509*>& certs) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) die("writing a certificate");
  for (X509* c : certs) {
    if (PEM_write_X509(f, c) != 1) die("PEM_write_X509");
  }
  std::fclose(f);
}

std::string day_of(time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

TestPki make() {
  TestPki p;
  char tmpl[] = "/tmp/corral-pki-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) die("mkdtemp");
  p.dir = tmpl;
  auto at = [&](const std::string& name) { return p.dir + "/" + name; };
  const std::string names = "DNS:localhost,IP:127.0.0.1,IP:::1";

  Key ca_key = ec_key();
  Cert ca = make_cert(ca_key.get(), {"corral test CA", "", true}, nullptr, nullptr);
  p.ca = at("ca.pem");
  write_certs(p.ca, {ca.get()});

  auto leaf = [&](const std::string& stem, Key key, const Spec& spec, X509* issuer,
                  EVP_PKEY* issuer_key, std::vector<X509*> chain = {}) {
    Cert c = make_cert(key.get(), spec, issuer, issuer_key);
    CertFiles f{at(stem + ".pem"), at(stem + ".key")};
    chain.insert(chain.begin(), c.get());
    write_certs(f.cert, chain);
    write_key(f.key, key.get());
    return f;
  };
  p.ec = leaf("ec", ec_key(), {"localhost", names}, ca.get(), ca_key.get());
  p.rsa = leaf("rsa", rsa_key(), {"localhost", names}, ca.get(), ca_key.get());
  const long day = 86400;
  p.expired = leaf("expired", ec_key(), {"localhost", names, false, -30 * day, -day}, ca.get(),
                   ca_key.get());
  p.expired_on = day_of(std::time(nullptr) - day);
  p.other_host =
      leaf("other-host", ec_key(), {"api.internal", "DNS:api.internal"}, ca.get(), ca_key.get());
  p.self_signed = leaf("self-signed", ec_key(), {"localhost", names}, nullptr, nullptr);

  Key mid_key = ec_key();
  Cert mid =
      make_cert(mid_key.get(), {"corral test intermediate CA", "", true}, ca.get(), ca_key.get());
  p.intermediate = at("intermediate.pem");
  write_certs(p.intermediate, {mid.get()});
  Key via_key = ec_key();
  Cert via = make_cert(via_key.get(), {"localhost", names}, mid.get(), mid_key.get());
  p.via_intermediate = {at("via-intermediate.pem"), at("via-intermediate.key")};
  write_certs(p.via_intermediate.cert, {via.get()});
  write_key(p.via_intermediate.key, via_key.get());
  p.via_chain = {at("via-chain.pem"), p.via_intermediate.key};
  write_certs(p.via_chain.cert, {via.get(), mid.get()});

  Key client_ca_key = ec_key();
  Cert client_ca =
      make_cert(client_ca_key.get(), {"corral test client CA", "", true}, nullptr, nullptr);
  p.client_ca = at("client-ca.pem");
  write_certs(p.client_ca, {client_ca.get()});
  p.client = leaf("client", ec_key(), {"corral test client", "DNS:client.corral.test"},
                  client_ca.get(), client_ca_key.get());
  return p;
}

// The test PKI and its directory, removed when the process exits.
struct Owned {
  TestPki pki;
  ~Owned() {
    std::error_code ignored;
    std::filesystem::remove_all(pki.dir, ignored);
  }
};

}  // namespace

const TestPki& test_pki() {
  static const Owned owned{make()};
  return owned.pki;
}

}  // namespace corral::test
