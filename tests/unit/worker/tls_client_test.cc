// TLS in the lean client (worker/http/tls_session.h, link.h): what a staging API's users meet.
// Good certificates pass (ECDSA and RSA, TLS 1.2 and 1.3), sessions resume, and every broken
// rule is a transport error in words a user can act on, naming the origin. The servers are the
// scripted raw server over TLS, with certificates made for the test (tests/support/test_pki.h).
#include <catch2/catch.hpp>

#include <openssl/ssl.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "shared/proc.h"
#include "shared/uv/listener.h"
#include "shared/uv/stream.h"
#include "shared/uv/timer.h"
#include "tests/support/raw_http_server.h"
#include "tests/support/test_pki.h"
#include "worker/http/curl_client.h"
#include "worker/http/lean_client.h"

using corral::test::close_connection;
using corral::test::RawHttpServer;
using corral::test::RawRequest;
using corral::test::Script;
using corral::test::send;
using corral::test::test_pki;
using corral::test::TlsServerOptions;
using corral::worker::BodyBudget;
using corral::worker::ClientOptions;
using corral::worker::CurlClient;
using corral::worker::HttpRequest;
using corral::worker::HttpResponse;
using corral::worker::LeanClient;
namespace http = corral::http;

namespace {

const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

RawHttpServer::ScriptFor always_ok() {
  return [](const RawRequest&) { return Script{send(kOk)}; };
}

// A lean client that trusts the test CA (unless the options say otherwise), and a server.
class Tls {
 public:
  explicit Tls(ClientOptions opts = trusting()) {
    uv_loop_init(&loop);
    curl = std::make_unique<CurlClient>(&loop, opts, &budget);
    http = std::make_unique<LeanClient>(&loop, opts, *curl, budget);
  }
  ~Tls() {
    http.reset();
    curl.reset();
    server.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  static ClientOptions trusting() {
    ClientOptions o;
    o.tls.ca_file = test_pki().ca;
    return o;
  }

  RawHttpServer& serve(TlsServerOptions tls, RawHttpServer::ScriptFor script = always_ok()) {
    server = std::make_unique<RawHttpServer>(&loop, std::move(script), tls);
    return *server;
  }
  std::string origin() const { return "https://127.0.0.1:" + std::to_string(server->port()); }

  bool run_until(const std::function<bool()>& done, uint64_t timeout_ms = 10000) {
    corral::uv::Timer tick(&loop);
    tick.start(5, 5, [] {});
    uint64_t deadline = corral::monotonic_ms() + timeout_ms;
    while (!done() && corral::monotonic_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    return done();
  }
  HttpResponse fetch(HttpRequest req) {
    std::optional<HttpResponse> got;
    http->send(std::move(req), [&](HttpResponse&& r) { got = std::move(r); });
    REQUIRE(run_until([&] { return got.has_value(); }));
    return std::move(*got);
  }
  HttpResponse get(const std::string& url, std::shared_ptr<const http::TlsOptions> tls = nullptr,
                   http::HttpVersion version = http::HttpVersion::kAuto) {
    HttpRequest req;
    req.url = url;
    req.tls = std::move(tls);
    req.http_version = version;
    return fetch(std::move(req));
  }

  uv_loop_t loop;
  BodyBudget budget;
  std::unique_ptr<CurlClient> curl;
  std::unique_ptr<LeanClient> http;
  std::unique_ptr<RawHttpServer> server;
};

TlsServerOptions with_cert(const corral::test::CertFiles& c) {
  TlsServerOptions o;
  o.cert = c.cert;
  o.key = c.key;
  return o;
}

std::shared_ptr<const http::TlsOptions> options(const std::function<void(http::TlsOptions&)>& set) {
  http::TlsOptions o;
  o.ca_file = test_pki().ca;
  set(o);
  return std::make_shared<const http::TlsOptions>(o);
}

}  // namespace

TEST_CASE("tls: a request over TLS 1.3 and 1.2, with ECDSA and RSA certificates, is answered") {
  struct Case {
    const char* name;
    const corral::test::CertFiles* cert;
    int version;
    const char* expect_version;
  };
  const Case cases[] = {{"ECDSA, TLS 1.3", &test_pki().ec, TLS1_3_VERSION, "TLSv1.3"},
                        {"RSA, TLS 1.3", &test_pki().rsa, TLS1_3_VERSION, "TLSv1.3"},
                        {"ECDSA, TLS 1.2", &test_pki().ec, TLS1_2_VERSION, "TLSv1.2"},
                        {"RSA, TLS 1.2", &test_pki().rsa, TLS1_2_VERSION, "TLSv1.2"}};
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Tls t;
      TlsServerOptions o = with_cert(*c.cert);
      o.min_version = o.max_version = c.version;
      auto& server = t.serve(o);
      HttpResponse r = t.get(server.url("/hello"));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(r.body == "hello");
      CHECK(std::string(r.protocol) == "HTTP/1.1");  // the server answers ALPN with http/1.1
      CHECK(r.tls_ms > 0);                           // it waited for the handshake
      CHECK(r.total_ms >= r.tls_ms);
      HttpResponse again = t.get(server.url("/again"));
      CHECK(again.body == "hello");
      CHECK(again.tls_ms == 0);  // the connection was kept
      CHECK(server.connections() == 1);
      CHECK(server.requests().at(0).bytes.find("GET /hello HTTP/1.1\r\n") == 0);
      CHECK(t.http->tls_counts().full == 1);
    }
  }
}

TEST_CASE("tls: a new connection to the same server resumes the session") {
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    DYNAMIC_SECTION("version " << version) {
      Tls t;
      TlsServerOptions o = with_cert(test_pki().ec);
      o.max_version = version;
      auto& server = t.serve(o, [](const RawRequest&) {
        return Script{send("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"),
                      close_connection()};
      });
      for (int i = 0; i < 3; ++i) {
        HttpResponse r = t.get(server.url("/"));
        INFO(r.error);
        CHECK(r.status == 200);
      }
      CHECK(server.connections() == 3);
      CHECK(t.http->tls_counts().full == 1);
      CHECK(t.http->tls_counts().resumed == 2);
    }
  }
}

TEST_CASE("tls: every broken certificate rule is an error that says what failed") {
  const auto& pki = test_pki();
  struct Case {
    const char* name;
    TlsServerOptions server;
    std::string error;  // before " (https://127.0.0.1:<port>)"
  };
  const Case cases[] = {
      {"self-signed", with_cert(pki.self_signed),
       "certificate verify failed: self-signed certificate"},
      {"for another host", with_cert(pki.other_host),
       "hostname mismatch: certificate is for api.internal, not 127.0.0.1"},
      {"expired", with_cert(pki.expired), "certificate expired on " + pki.expired_on},
      {"issued by an intermediate the server does not send", with_cert(pki.via_intermediate),
       "certificate verify failed: unable to get local issuer certificate"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Tls t;
      auto& server = t.serve(c.server);
      HttpResponse r = t.get(server.url("/"));
      CHECK(r.status == 0);
      CHECK(r.error == c.error + " (" + t.origin() + ")");
      CHECK(server.requests().empty());
    }
  }
}

TEST_CASE("tls: the system's CA store is used when no ca_file is set") {
  Tls t{ClientOptions{}};
  auto& server = t.serve(with_cert(test_pki().ec));
  HttpResponse r = t.get(server.url("/"));
  CHECK(r.error ==
        "certificate verify failed: unable to get local issuer certificate (" + t.origin() + ")");
}

TEST_CASE("tls: a server that sends its intermediate is trusted through it") {
  Tls t;
  auto& server = t.serve(with_cert(test_pki().via_chain));
  HttpResponse r = t.get(server.url("/"));
  INFO(r.error);
  CHECK(r.status == 200);
}

TEST_CASE("tls: verify false accepts any certificate, server_name names the one expected") {
  Tls t;
  auto& server = t.serve(with_cert(test_pki().self_signed));
  HttpResponse r = t.get(server.url("/"), options([](auto& o) { o.verify = false; }));
  INFO(r.error);
  CHECK(r.status == 200);

  Tls other;
  auto& internal = other.serve(with_cert(test_pki().other_host));
  r = other.get(internal.url("/"), options([](auto& o) { o.server_name = "api.internal"; }));
  INFO(r.error);
  CHECK(r.status == 200);
  r = other.get(internal.url("/"), options([](auto& o) { o.server_name = "www.internal"; }));
  CHECK(r.error == "hostname mismatch: certificate is for api.internal, not www.internal (" +
                       other.origin() + ")");
}

TEST_CASE("tls: a server that wants a client certificate gets tls.client_cert, or says so") {
  const auto& pki = test_pki();
  TlsServerOptions o = with_cert(pki.ec);
  o.client_ca = pki.client_ca;
  Tls t;
  auto& server = t.serve(o);
  HttpResponse r = t.get(server.url("/"));
  CHECK(r.status == 0);
  CHECK(r.error ==
        "the server requires a client certificate (tls.client_cert and "
        "tls.client_key) (" +
            t.origin() + ")");
  r = t.get(server.url("/"), options([&](auto& c) {
              c.client_cert = pki.client.cert;
              c.client_key = pki.client.key;
            }));
  INFO(r.error);
  CHECK(r.status == 200);
  CHECK(r.body == "hello");
}

TEST_CASE("tls: a client key readable by others is refused before any connection") {
  const auto& pki = test_pki();
  std::string key = pki.dir + "/client-open.key";
  std::filesystem::copy_file(pki.client.key, key,
                             std::filesystem::copy_options::overwrite_existing);
  ::chmod(key.c_str(), 0644);
  Tls t;
  auto& server = t.serve(with_cert(pki.ec));
  HttpResponse r = t.get(server.url("/"), options([&](auto& c) {
                           c.client_cert = pki.client.cert;
                           c.client_key = key;
                         }));
  CHECK(r.error == "tls.client_key " + key +
                       ": mode 0644 lets its group or others read it; make it 0600 (chmod 600)");
  CHECK(server.connections() == 0);
}

TEST_CASE("tls: handshakes that fail for the connection's sake say why") {
  SECTION("no shared protocol version") {
    Tls t;
    TlsServerOptions o = with_cert(test_pki().ec);
    o.max_version = TLS1_2_VERSION;
    auto& server = t.serve(o);
    HttpResponse r = t.get(server.url("/"), options([](auto& c) { c.min_version = "1.3"; }));
    CHECK(r.error == "handshake failed: no shared protocol version (" + t.origin() + ")");
  }
  SECTION("the server closes in the middle of the handshake") {
    Tls t;
    TlsServerOptions o = with_cert(test_pki().ec);
    o.close_in_handshake = true;
    auto& server = t.serve(o);
    HttpResponse r = t.get(server.url("/"));
    CHECK(r.error == "handshake failed: the server closed the connection (" + t.origin() + ")");
  }
  SECTION("a plain HTTP server on an https URL") {
    Tls t;
    // As nginx does on a plain port: the ClientHello gets a 400 in plain HTTP, then a close.
    std::vector<std::unique_ptr<corral::uv::Stream>> peers;
    auto listener = corral::uv::Listener::tcp(&t.loop, "127.0.0.1", 0, [&](auto& l, int status) {
      if (status != 0) return;
      auto peer = corral::uv::Stream::accept(&t.loop, l.raw());
      if (!peer) return;
      (void)(*peer)->write(
          "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: "
          "close\r\n\r\n");
      (*peer)->shutdown([] {});
      peers.push_back(std::move(*peer));
    });
    REQUIRE(listener.is_ok());
    const std::string origin = "https://127.0.0.1:" + std::to_string((*listener)->port());
    HttpResponse r = t.get(origin + "/");
    CHECK(r.error ==
          "handshake failed: the server did not answer in TLS (a plain http:// "
          "port?) (" +
              origin + ")");
    (*listener)->close();
    peers.clear();
  }
}

TEST_CASE("tls: a record cut short by the server's close is a transport error") {
  Tls t;
  // A record header that promises 64 bytes, then 10 of them, then FIN.
  auto& server = t.serve(with_cert(test_pki().ec), [](const RawRequest&) {
    return Script{corral::test::raw(std::string("\x17\x03\x03\x00\x40", 5) + "0123456789"),
                  close_connection()};
  });
  HttpResponse r = t.get(server.url("/"));
  CHECK(r.status == 0);
  CHECK(r.error == "connection closed by the server in the middle of a TLS record (truncated) (" +
                       t.origin() + ")");
}

TEST_CASE("tls: ALPN decides the protocol, and http_version 2 refuses a server that chose 1.1") {
  Tls t;
  auto& server = t.serve(with_cert(test_pki().ec));  // answers ALPN with http/1.1 only
  HttpResponse r = t.get(server.url("/"));
  CHECK(std::string(r.protocol) == "HTTP/1.1");
  CHECK(t.http->tls_counts().http1 == 1);
  r = t.get(server.url("/"), nullptr, http::HttpVersion::kHttp2);
  CHECK(r.error == "http_version is 2, but the server chose HTTP/1.1 by ALPN (" + t.origin() + ")");
  TlsServerOptions silent = with_cert(test_pki().ec);
  silent.alpn = "";  // a server that does not answer ALPN speaks HTTP/1.1
  Tls u;
  auto& quiet = u.serve(silent);
  r = u.get(quiet.url("/"));
  INFO(r.error);
  CHECK(r.status == 200);
  CHECK(std::string(r.protocol) == "HTTP/1.1");
}

TEST_CASE("tls: handshakes run in slices, with the loop's timers served between them") {
  ClientOptions opts = Tls::trusting();
  opts.handshake_slice_ns = 1;  // one handshake step per turn of the loop
  opts.max_connections_per_host = 40;
  Tls t(opts);
  auto& server = t.serve(with_cert(test_pki().ec), [](const RawRequest&) {
    return Script{corral::test::wait_ms(200), send(kOk)};
  });
  int answered = 0;
  for (int i = 0; i < 40; ++i) {
    HttpRequest req;
    req.url = server.url("/");
    t.http->send(std::move(req), [&](HttpResponse&& r) { answered += r.status == 200; });
  }
  // A timer looks at the queue: it runs while handshakes wait for their turn, not after them all.
  size_t most_waiting = 0;
  corral::uv::Timer tick(&t.loop);
  tick.start(0, 1, [&] { most_waiting = std::max(most_waiting, t.http->handshakes().waiting()); });
  REQUIRE(t.run_until([&] { return answered == 40; }, 20000));
  CHECK(t.http->tls_counts().full + t.http->tls_counts().resumed == 40);
  CHECK(most_waiting > 1);
}
