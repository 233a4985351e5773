// nginx (Debian's nginx-light) as a test's TLS and HTTP/2 server: its own prefix and config in a
// temporary directory, one process in the foreground (master_process off, daemon off), killed
// by its PID when the fixture goes away. Every path answers a small JSON document,
// {"status":"N"}; over https (TLS 1.2 and 1.3, h2 or http/1.1 by ALPN, the test PKI's ECDSA
// certificate for localhost and 127.0.0.1) and plain http, where /nginx_status is its
// stub_status.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tests/support/harness.h"

namespace corral::test {

class Nginx {
 public:
  struct Options {
    int worker_connections = 20000;
    std::string
        server_extra;  // lines added to the server block, e.g. "http2_max_concurrent_streams 1;"
  };
  // Fails the test when nginx is not installed or does not start within 10 s.
  Nginx();
  explicit Nginx(Options options);
  ~Nginx();
  Nginx(const Nginx&) = delete;
  Nginx& operator=(const Nginx&) = delete;

  // "https://127.0.0.1:PORT" and "http://127.0.0.1:PORT".
  std::string https_base() const { return "https://127.0.0.1:" + std::to_string(https_port_); }
  std::string http_base() const { return "http://127.0.0.1:" + std::to_string(http_port_); }
  int pid() const;
  // Requests served so far (stub_status), not counting the fixture's own status requests.
  uint64_t requests();

 private:
  struct Child;
  std::unique_ptr<Child> child_;
  std::string dir_;
  int https_port_ = 0;
  int http_port_ = 0;
  uint64_t own_ = 0;  // status requests the fixture made
};

}  // namespace corral::test
