// Certificates for TLS tests, made with OpenSSL in a temporary directory the first time a test
// asks (once per test program) and removed when it exits. Every file is PEM; keys are 0600.
//
// `ca` issues the good server certificates; a client that trusts it (tls.ca_file) and dials
// "localhost", 127.0.0.1 or ::1 accepts `ec` and `rsa`. The others each break one rule.
#pragma once

#include <string>

namespace corral::test {

struct CertFiles {
  std::string cert;  // the certificate (a chain when the name says so)
  std::string key;
};

struct TestPki {
  std::string dir;
  std::string ca;              // "corral test CA": trust this one
  CertFiles ec;                // localhost, 127.0.0.1, ::1; ECDSA P-256, issued by `ca`
  CertFiles rsa;               // the same names; RSA 2048, issued by `ca`
  CertFiles expired;           // the same names, issued by `ca`, expired on `expired_on`
  std::string expired_on;      // "YYYY-MM-DD", UTC: yesterday when the files were made
  CertFiles other_host;        // api.internal only, issued by `ca`
  CertFiles self_signed;       // localhost, 127.0.0.1: issued by itself
  CertFiles via_intermediate;  // localhost, 127.0.0.1: issued by an intermediate CA of `ca`;
                               // the file holds the leaf only, so a client cannot link it
  std::string intermediate;    // that intermediate CA's certificate
  CertFiles via_chain;         // the same leaf, with the intermediate in its file
  std::string client_ca;       // "corral test client CA": what a server that wants a client
                               // certificate trusts
  CertFiles client;            // a client certificate issued by `client_ca`
};

// The certificates, made on first use; aborts the test program when OpenSSL cannot make them.
const TestPki& test_pki();

}  // namespace corral::test
