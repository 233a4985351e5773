// Every HTTP client the engine can be given, over every transport it can speak, against the
// same cases, so that the engine cannot tell them apart: a scripted raw server
// (tests/support/raw_http_server.h) for framing, encodings, connection reuse and failures, and
// corral-target for redirects, size limits and the memory budget (over TLS and HTTP/2, which
// corral-target does not speak, scripts that answer as it does). Each case runs once per
// client and transport, in a section named after them. Over HTTP/2 the raw server plays the
// same HTTP/1.1 scripts on streams (tests/support/h2_script_server.h).
#include <catch2/catch.hpp>

#include <algorithm>

#include <nghttp2/nghttp2.h>
#include <strings.h>
#include <zlib.h>

#include <charconv>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shared/proc.h"
#include "shared/uv/timer.h"
#include "tests/support/h2_script_server.h"
#include "tests/support/raw_http_server.h"
#include "tests/support/test_pki.h"
#include "tools/target/target.h"
#include "worker/http/curl_client.h"
#include "worker/http/lean_client.h"

using corral::test::close_connection;
using corral::test::H2ServerOptions;
using corral::test::RawHttpServer;
using corral::test::RawRequest;
using corral::test::reset_connection;
using corral::test::Script;
using corral::test::send;
using corral::test::test_pki;
using corral::test::TlsServerOptions;
using corral::test::trickle;
using corral::test::wait_ms;
using corral::worker::BodyBudget;
using corral::worker::ClientOptions;
using corral::worker::CurlClient;
using corral::worker::LeanClient;
using corral::worker::HttpClient;
using corral::worker::HttpRequest;
using corral::worker::HttpResponse;
using nlohmann::json;

namespace {

// A client under test, and the client it hands requests to, if any.
struct Clients {
  std::unique_ptr<HttpClient> fallback;
  std::unique_ptr<HttpClient> http;
};
using MakeClients = Clients (*)(uv_loop_t*, const ClientOptions&, BodyBudget&);

Clients make_curl(uv_loop_t* loop, const ClientOptions& opts, BodyBudget&) {
  return {nullptr, std::make_unique<CurlClient>(loop, opts)};
}

Clients make_h1(uv_loop_t* loop, const ClientOptions& opts, BodyBudget& budget) {
  auto curl = std::make_unique<CurlClient>(loop, opts, &budget);
  auto h1 = std::make_unique<LeanClient>(loop, opts, *curl, budget);
  return {std::move(curl), std::move(h1)};
}

// How the server speaks: HTTP/1.1 over TCP or TLS, HTTP/2 over TLS chosen by ALPN ("h2"), or
// HTTP/2 over TCP that the client speaks by prior knowledge ("h2c", http_version 2).
enum class Transport { kPlain, kTls, kH2, kH2c };

struct Impl {
  const char* name;
  MakeClients make;
  Transport transport;
  bool curl;  // libcurl is the client
  bool h2() const { return transport == Transport::kH2 || transport == Transport::kH2c; }
};

// The clients and transports every case runs against: another one is one line here. libcurl
// (7.88) is not run over HTTP/2: a 50 KB header value stalls its transfer until the timeout,
// a cancelled or late transfer closes the whole connection, and a connection by prior
// knowledge (h2c) fails at its second request ("Error in the HTTP2 framing layer").
const Impl kClients[] = {
    {"curl", make_curl, Transport::kPlain, true},
    {"h1", make_h1, Transport::kPlain, false},
    {"curl tls", make_curl, Transport::kTls, true},
    {"h1 tls", make_h1, Transport::kTls, false},
    {"h1 h2", make_h1, Transport::kH2, false},
    {"h1 h2c", make_h1, Transport::kH2c, false},
};

// A client that sends every request with http_version 2: over http://, HTTP/2 by prior
// knowledge (h2c).
class PriorKnowledge final : public HttpClient {
 public:
  explicit PriorKnowledge(HttpClient& inner) : inner_(inner) {}
  void send(HttpRequest req, Done done) override {
    req.http_version = corral::http::HttpVersion::kHttp2;
    inner_.send(std::move(req), std::move(done));
  }
  void send_lazy(Make make, Done done) override {
    inner_.send_lazy(
        [make = std::move(make)]() {
          std::optional<HttpRequest> req = make();
          if (req) req->http_version = corral::http::HttpVersion::kHttp2;
          return req;
        },
        std::move(done));
  }
  size_t in_flight() const override { return inner_.in_flight(); }
  uint64_t completed() const override { return inner_.completed(); }
  uint64_t body_bytes() const override { return inner_.body_bytes(); }
  std::vector<std::pair<std::string, corral::worker::OriginErrors>> origin_errors()
      const override {
    return inner_.origin_errors();
  }
  void cancel(uint64_t tag) override { inner_.cancel(tag); }

 private:
  HttpClient& inner_;
};

Script target_script(const RawRequest& req);

class Fixture {
 public:
  explicit Fixture(const Impl& impl, ClientOptions opts = {}) : impl_(impl) {
    uv_loop_init(&loop);
    budget.limit = opts.memory_budget_bytes;
    opts.tls.ca_file = test_pki().ca;
    clients_ = impl.make(&loop, opts, budget);
    http = clients_.http.get();
    lean = dynamic_cast<LeanClient*>(http);
    if (impl.transport == Transport::kH2c) {
      prior_ = std::make_unique<PriorKnowledge>(*http);
      http = prior_.get();
    }
  }
  // Client first (it may hold the fallback), then the servers; the loop must end empty.
  ~Fixture() {
    prior_.reset();
    clients_.http.reset();
    clients_.fallback.reset();
    server.reset();
    a.reset();
    b.reset();
    script_a.reset();
    script_b.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }

  // A raw server that speaks the variant's transport; `h2` for the HTTP/2 ones.
  RawHttpServer& serve(RawHttpServer::ScriptFor script_for, H2ServerOptions h2 = {}) {
    server = make_server(std::move(script_for), h2);
    return *server;
  }

  // Two corral-targets, a and b, for redirects within and across origins; over TLS and
  // HTTP/2, two raw servers whose scripts answer as corral-target does.
  void start_targets() {
    if (impl_.transport == Transport::kPlain) {
      for (auto* t : {&a, &b}) {
        *t = std::make_unique<corral::target::Target>(&loop);
        REQUIRE((*t)->listen("127.0.0.1", 0).is_ok());
      }
      base_a = "http://127.0.0.1:" + std::to_string(a->port());
      base_b = "http://127.0.0.1:" + std::to_string(b->port());
      return;
    }
    script_a = make_server(target_script, {});
    script_b = make_server(target_script, {});
    base_a = script_a->url("");
    base_b = script_b->url("");
  }
  // Requests target a has read.
  uint64_t requests_a() const { return a ? a->requests() : script_a->requests().size(); }

  // Runs the loop until `done` holds or `timeout_ms` passes; returns whether it held.
  bool run_until(const std::function<bool()>& done, uint64_t timeout_ms = 10000) {
    corral::uv::Timer tick(&loop);  // wakes the loop to look at `done` and the clock
    tick.start(5, 5, [] {});
    uint64_t deadline = corral::monotonic_ms() + timeout_ms;
    while (!done() && corral::monotonic_ms() < deadline) {
      uv_run(&loop, UV_RUN_ONCE);
      peak_body_bytes = std::max(peak_body_bytes, http->body_bytes());
    }
    return done();
  }
  void run_for(uint64_t ms) {
    run_until([] { return false; }, ms);
  }

  HttpResponse fetch(HttpRequest req) {
    std::optional<HttpResponse> got;
    http->send(std::move(req), [&](HttpResponse&& r) { got = std::move(r); });
    REQUIRE(run_until([&] { return got.has_value(); }));
    // The lean client spoke the variant's protocol, not another one it could fall back to.
    if (lean != nullptr && got->status != 0) {
      CHECK(got->protocol == std::string(impl_.h2() ? "HTTP/2" : "HTTP/1.1"));
    }
    return std::move(*got);
  }

  json echo_of(HttpRequest req) {
    HttpResponse r = fetch(std::move(req));
    INFO(r.error << " " << r.status << " " << r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }

  uv_loop_t loop;
  BodyBudget budget;
  HttpClient* http;
  LeanClient* lean;  // the lean client, when it is the one under test
  std::unique_ptr<RawHttpServer> server;
  std::unique_ptr<corral::target::Target> a, b;
  std::unique_ptr<RawHttpServer> script_a, script_b;
  std::string base_a, base_b;
  uint64_t peak_body_bytes = 0;

 private:
  std::unique_ptr<RawHttpServer> make_server(RawHttpServer::ScriptFor script_for,
                                             const H2ServerOptions& h2) {
    TlsServerOptions tls;
    tls.cert = test_pki().ec.cert;
    tls.key = test_pki().ec.key;
    switch (impl_.transport) {
      case Transport::kPlain:
        return std::make_unique<RawHttpServer>(&loop, std::move(script_for));
      case Transport::kTls:
        return std::make_unique<RawHttpServer>(&loop, std::move(script_for), tls);
      case Transport::kH2:
        return corral::test::h2_server(&loop, std::move(script_for), h2, tls);
      case Transport::kH2c:
        return corral::test::h2_server(&loop, std::move(script_for), h2);
    }
    return nullptr;
  }

  const Impl& impl_;
  Clients clients_;
  std::unique_ptr<PriorKnowledge> prior_;
};

HttpRequest request(std::string method, std::string url, std::string body = "") {
  HttpRequest r;
  r.method = std::move(method);
  r.url = std::move(url);
  r.body = std::move(body);
  r.headers = {"Authorization: Bearer t0k", "Cookie: c=1", "Content-Type: application/json",
               "X-Keep: yes"};
  return r;
}

HttpRequest get(std::string url) { return request("GET", std::move(url)); }

// A 200 with a Content-Length; `headers` are whole lines, each ending in CRLF.
std::string ok(std::string_view body, std::string_view headers = "") {
  return "HTTP/1.1 200 OK\r\n" + std::string(headers) +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

// Every request answered with `bytes`, on a connection kept open.
RawHttpServer::ScriptFor always(std::string bytes) {
  return [bytes](const RawRequest&) { return Script{send(bytes)}; };
}

// Requests to `path` get `script`; the others a small 200.
RawHttpServer::ScriptFor route(std::string path, Script script) {
  return [path, script](const RawRequest& req) {
    return req.target == path ? script : Script{send(ok("fine"))};
  };
}

// What the client counted against `origin` ("http://127.0.0.1:<port>").
corral::worker::OriginErrors errors_of(const HttpClient& http, const std::string& origin) {
  for (const auto& [name, errors] : http.origin_errors()) {
    if (name == origin) return errors;
  }
  return {};
}

std::vector<std::string> header_values(const HttpResponse& r, std::string_view name) {
  std::vector<std::string> out;
  for (const auto& [n, v] : r.headers) {
    if (n.size() == name.size() && strncasecmp(n.data(), name.data(), n.size()) == 0) {
      out.push_back(v);
    }
  }
  return out;
}

// `text` compressed by zlib, as a gzip member (window_bits 31) or a zlib stream (15).
std::string compressed(const std::string& text, int window_bits) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) ==
          Z_OK);
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string hex(size_t n) {
  char digits[16];
  return std::string(digits, std::to_chars(digits, digits + sizeof(digits), n, 16).ptr);
}

// The value of `name` in a query string ("a=1&b=2"), as it is (no escapes are used here).
std::string query_param(std::string_view query, std::string_view name, std::string fallback) {
  while (!query.empty()) {
    std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    if (pair.substr(0, pair.find('=')) == name && pair.find('=') != std::string_view::npos) {
      return std::string(pair.substr(pair.find('=') + 1));
    }
  }
  return fallback;
}

// The request's header fields, names lower-cased, from its head as the raw server renders it.
json headers_of(const RawRequest& req) {
  json headers = json::object();
  std::string_view head(req.bytes);
  head = head.substr(0, head.find("\r\n\r\n"));
  for (size_t at = head.find("\r\n"); at != std::string_view::npos;) {
    size_t next = head.find("\r\n", at + 2);
    std::string_view line = head.substr(at + 2, next == std::string_view::npos ? head.npos
                                                                              : next - at - 2);
    size_t colon = line.find(':');
    std::string value(line.substr(colon + 1));
    value.erase(0, value.find_first_not_of(' '));
    std::string name(line.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    headers[name] = value;
    at = next;
  }
  return headers;
}

// What corral-target answers on the routes these cases use (tools/target/misbehave.cc).
Script target_script(const RawRequest& req) {
  std::string_view target(req.target);
  std::string_view path = target.substr(0, target.find('?'));
  std::string_view query = path.size() < target.size() ? target.substr(path.size() + 1) : "";
  auto answer = [](const std::string& status, const std::string& headers,
                   const std::string& body) {
    return Script{send("HTTP/1.1 " + status + "\r\n" + headers +
                       "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body)};
  };
  if (path == "/redirect") {
    return answer(query_param(query, "code", "302") + " Moved",
                  "Location: " + query_param(query, "to", "/echo") + "\r\n", "moved");
  }
  if (path == "/redirect-loop") return answer("302 Found", "Location: /redirect-loop\r\n", "again");
  if (path == "/echo") {
    json echo = {{"method", req.method}, {"path", std::string(path)}, {"query", std::string(query)},
                 {"headers", headers_of(req)}, {"body", req.body}};
    return answer("200 OK", "Content-Type: application/json\r\n", echo.dump());
  }
  if (path == "/big") {
    size_t bytes = std::stoull(query_param(query, "bytes", "1024"));
    return answer("200 OK", "Content-Type: application/json\r\n",
                  "{\"data\": \"" + std::string(bytes > 12 ? bytes - 12 : 0, 'x') + "\"}");
  }
  return answer("404 Not Found", "", "no such route");
}

std::string sample_json(size_t items) {
  std::string s = "[";
  for (size_t i = 0; i < items; ++i) s += (i ? "," : "") + json{{"id", i}, {"ok", true}}.dump();
  return s + "]";
}

}  // namespace

// --- Framing --------------------------------------------------------------------------------

TEST_CASE("http conformance: a chunked body with extensions and trailers arrives whole") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server =
          f.serve(always("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "5;name=value\r\nhello\r\n"
                         "1;a=b;quoted=\"x y\"\r\n \r\n"
                         "00000005\r\nworld\r\n"
                         "0\r\nX-Trailer: yes\r\n\r\n"));
      HttpResponse r = f.fetch(get(server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(r.body == "hello world");
      // The trailers were consumed: the connection carries the next exchange.
      CHECK(f.fetch(get(server.url("/"))).body == "hello world");
      CHECK(server.connections() == 1);
    }
  }
}

TEST_CASE("http conformance: a gzip body is decoded") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      std::string text = sample_json(500);
      auto& server = f.serve(always(ok(compressed(text, 15 + 16), "Content-Encoding: gzip\r\n")));
      HttpResponse r = f.fetch(get(server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(r.body == text);
    }
  }
}

TEST_CASE("http conformance: a deflate body (a zlib stream) is decoded") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      std::string text = sample_json(500);
      auto& server = f.serve(always(ok(compressed(text, 15), "Content-Encoding: deflate\r\n")));
      HttpResponse r = f.fetch(get(server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(r.body == text);
    }
  }
}

TEST_CASE("http conformance: a body that claims gzip but is not is a transport error") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(always(ok("this is not gzip at all", "Content-Encoding: gzip\r\n")));
      HttpResponse r = f.fetch(get(server.url("/")));
      CHECK(r.status == 0);
      CHECK_FALSE(r.error.empty());
    }
  }
}

TEST_CASE("http conformance: an HTTP/1.0 body without Content-Length ends at close") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      std::string body(20000, 'z');
      auto& server = f.serve([body](const RawRequest&) {
        return Script{send("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body),
                      close_connection()};
      });
      HttpResponse r = f.fetch(get(server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(r.body == body);
    }
  }
}

TEST_CASE("http conformance: a HEAD answer with a Content-Length has no body") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve([](const RawRequest& req) {
        if (req.method == "HEAD") {
          return Script{send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")};
        }
        return Script{send(ok("after"))};
      });
      HttpResponse r = f.fetch(request("HEAD", server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(r.body.empty());
      CHECK(header_values(r, "content-length") == std::vector<std::string>{"1000"});
      CHECK(f.fetch(get(server.url("/"))).body == "after");
      CHECK(server.connections() == 1);
    }
  }
}

TEST_CASE("http conformance: 204 and 304 answers have no body") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve([](const RawRequest& req) {
        if (req.target == "/204") return Script{send("HTTP/1.1 204 No Content\r\n\r\n")};
        // A 304's Content-Length is the size of the representation it stands for.
        if (req.target == "/304") {
          return Script{
              send("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 5\r\n\r\n")};
        }
        return Script{send(ok("after"))};
      });
      HttpResponse r = f.fetch(get(server.url("/204")));
      CHECK(r.status == 204);
      CHECK(r.body.empty());
      r = f.fetch(get(server.url("/304")));
      CHECK(r.status == 304);
      CHECK(r.body.empty());
      CHECK(f.fetch(get(server.url("/"))).body == "after");
      CHECK(server.connections() == 1);
    }
  }
}

TEST_CASE("http conformance: headers trickled a byte at a time make a whole response") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve([](const RawRequest&) {
        return Script{trickle("HTTP/1.1 200 OK\r\nX-Slow: yes\r\nContent-Length: 4\r\n\r\n", 5),
                      send("done")};
      });
      HttpResponse r = f.fetch(get(server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(header_values(r, "x-slow") == std::vector<std::string>{"yes"});
      CHECK(r.body == "done");
    }
  }
}

TEST_CASE("http conformance: 100 Continue is skipped, and status and headers are the final ones") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(
          always("HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n" + ok("final", "X-Final: 1\r\n")));
      HttpResponse r = f.fetch(request("POST", server.url("/"), "payload"));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(r.body == "final");
      CHECK(header_values(r, "x-final").size() == 1);
      CHECK(header_values(r, "x-interim").empty());
    }
  }
}

TEST_CASE(
    "http conformance: 103 Early Hints is skipped, and status and headers are the final ones") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server =
          f.serve(always("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" +
                         ok("final", "X-Final: 1\r\n")));
      HttpResponse r = f.fetch(get(server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(r.body == "final");
      CHECK(header_values(r, "x-final").size() == 1);
      CHECK(header_values(r, "link").empty());
    }
  }
}

TEST_CASE("http conformance: repeated headers are all kept, in order") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(always(ok("{}",
                                       "Set-Cookie: a=1; Path=/\r\nX-Other: x\r\n"
                                       "Set-Cookie: b=2\r\n")));
      HttpResponse r = f.fetch(get(server.url("/")));
      CHECK(header_values(r, "set-cookie") == std::vector<std::string>{"a=1; Path=/", "b=2"});
    }
  }
}

TEST_CASE("http conformance: a 50 KB header value is accepted") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      std::string value(50 * 1024, 'v');
      auto& server = f.serve(always(ok("{}", "X-Big: " + value + "\r\n")));
      HttpResponse r = f.fetch(get(server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(header_values(r, "x-big") == std::vector<std::string>{value});
    }
  }
}

TEST_CASE(
    "http conformance: a header section over 1 MB is a transport error, and the client goes on") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      std::string head = "HTTP/1.1 200 OK\r\n";
      for (int i = 0; i < 1100; ++i) {
        head += "X-Pad-" + std::to_string(i) + ": " + std::string(1000, 'p') + "\r\n";
      }
      auto& server = f.serve(route("/huge", {send(head + "Content-Length: 2\r\n\r\n{}")}));
      HttpResponse r = f.fetch(get(server.url("/huge")));
      CHECK(r.status == 0);
      CHECK_FALSE(r.error.empty());
      CHECK(f.fetch(get(server.url("/"))).body == "fine");
    }
  }
}

TEST_CASE("http conformance: bytes that are not UTF-8 arrive unchanged in the body and a header") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      const std::string bytes = "\xff\xfe not UTF-8 \xc3";
      const std::string body = bytes + std::string("\0\x80", 2);
      auto& server = f.serve(always(ok(body, "X-Bytes: " + bytes + "\r\n")));
      HttpResponse r = f.fetch(get(server.url("/")));
      CHECK(r.body == body);
      CHECK(header_values(r, "x-bytes") == std::vector<std::string>{bytes});
    }
  }
}

TEST_CASE("http conformance: a 1 MB request body arrives whole") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      std::string body(1 << 20, '\0');
      for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + i % 26);
      auto& server = f.serve(always(ok("stored")));
      HttpResponse r = f.fetch(request("POST", server.url("/"), body));
      INFO(r.error);
      CHECK(r.status == 200);
      REQUIRE(server.requests().size() == 1);
      CHECK(server.requests()[0].body == body);
    }
  }
}

// --- Connections ----------------------------------------------------------------------------

TEST_CASE("http conformance: sequential requests share one keep-alive connection") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(always(ok("again")));
      for (int i = 0; i < 3; ++i) CHECK(f.fetch(get(server.url("/"))).status == 200);
      CHECK(server.connections() == 1);
      CHECK(server.requests_on(0) == 3);
      if (impl.h2()) {
        // HTTP/2: the connection preface, then the requests on streams 1, 3 and 5.
        CHECK(server.received(0).rfind("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0) == 0);
        CHECK(server.requests()[2].stream == 5);
      } else {
        CHECK(server.received(0).rfind("GET / HTTP/1.1\r\n", 0) == 0);
      }
    }
  }
}

TEST_CASE("http conformance: after Connection: close the next request opens a new connection") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve([](const RawRequest&) {
        return Script{send(ok("bye", "Connection: close\r\n")), close_connection()};
      });
      CHECK(f.fetch(get(server.url("/"))).body == "bye");
      CHECK(f.fetch(get(server.url("/"))).body == "bye");
      CHECK(server.connections() == 2);
    }
  }
}

TEST_CASE("http conformance: a connection the server closed while idle is not reused") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve([](const RawRequest&) {
        return Script{send(ok("short-lived")), wait_ms(50), close_connection()};
      });
      CHECK(f.fetch(get(server.url("/"))).status == 200);
      f.run_for(200);
      HttpResponse r = f.fetch(get(server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(server.connections() == 2);
    }
  }
}

TEST_CASE("http conformance: a connection idle longer than max_idle_ms is not reused") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      ClientOptions opts;
      opts.max_idle_ms = 1000;  // curl counts whole seconds
      Fixture f(impl, opts);
      auto& server = f.serve(always(ok("again")));
      CHECK(f.fetch(get(server.url("/"))).status == 200);
      if (!impl.curl) {
        // The lean client closes it by itself, unasked, and forgets the origin with it.
        LeanClient* h1 = f.lean;
        REQUIRE(h1 != nullptr);
        CHECK(h1->origins() == 1);
        CHECK(f.run_until([&] { return server.open_connections() == 0; }, 5000));
        CHECK(f.run_until([&] { return h1->origins() == 0; }, 5000));
      } else {
        f.run_for(2200);  // curl closes one idle for more whole seconds than max_idle_ms's
      }
      CHECK(f.fetch(get(server.url("/"))).status == 200);
      CHECK(server.connections() == 2);
    }
  }
}

// The server resets a kept-alive connection when its second request comes: the client only
// learns at reuse that the connection is gone.
Script reset_on_reuse(const RawRequest& req) {
  if (req.on_connection > 1) return {reset_connection()};
  return {send(ok("first on its connection"))};
}

TEST_CASE("http conformance: a GET that meets a reset at reuse is sent again on a new connection") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(reset_on_reuse);
      CHECK(f.fetch(get(server.url("/"))).status == 200);
      HttpResponse r = f.fetch(get(server.url("/")));
      INFO(r.error);
      CHECK(r.status == 200);
      CHECK(server.connections() == 2);
    }
  }
}

TEST_CASE("http conformance: a POST that meets a reset at reuse is not sent again") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(reset_on_reuse);
      CHECK(f.fetch(get(server.url("/"))).status == 200);
      HttpResponse r = f.fetch(request("POST", server.url("/"), R"({"once":true})"));
      CHECK(r.status == 0);
      CHECK_FALSE(r.error.empty());
      CHECK(server.requests().size() == 2);
    }
  }
}

TEST_CASE("http conformance: a reset in the middle of the body is a transport error") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve([](const RawRequest&) {
        return Script{
            send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(100, 'b')),
            wait_ms(20), reset_connection()};
      });
      HttpResponse r = f.fetch(get(server.url("/")));
      CHECK(r.status == 0);
      CHECK_FALSE(r.error.empty());
      CHECK_FALSE(r.timed_out);
      CHECK(errors_of(*f.http, server.url("")).reset == 1);
    }
  }
}

TEST_CASE("http conformance: a connection closed without a byte of answer is a transport error") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve([](const RawRequest&) { return Script{close_connection()}; });
      HttpResponse r = f.fetch(get(server.url("/")));
      CHECK(r.status == 0);
      CHECK_FALSE(r.error.empty());
      CHECK(errors_of(*f.http, server.url("")).reset == 1);
    }
  }
}

TEST_CASE("http conformance: a refused connection is an error counted against its origin") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(always(ok("")));
      server.close();  // nothing listens on its port any more
      HttpResponse r = f.fetch(get(server.url("/")));
      CHECK(r.status == 0);
      CHECK_FALSE(r.error.empty());
      CHECK_FALSE(r.timed_out);
      CHECK(errors_of(*f.http, server.url("")).connect == 1);
    }
  }
}

TEST_CASE("http conformance: at most max_connections_per_host connections, and FIFO answers") {
  ClientOptions opts;
  opts.max_connections_per_host = 2;
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl, opts);
      auto& server = f.serve([](const RawRequest& req) {
        return Script{wait_ms(100), send(ok(req.target))};
      });
      std::vector<std::string> answered;
      size_t read_at_first_answer = 0;  // requests the server had read by then
      for (int i = 0; i < 6; ++i) {
        f.http->send(get(server.url("/" + std::to_string(i))), [&](HttpResponse&& r) {
          if (answered.empty()) read_at_first_answer = server.requests().size();
          answered.push_back(r.body);
        });
      }
      REQUIRE(f.run_until([&] { return answered.size() == 6; }));
      std::string arrivals;  // the order the server read them in, and on which connection
      for (const RawRequest& req : server.requests()) {
        arrivals += req.target + "@" + std::to_string(req.connection) + " ";
      }
      INFO("the server read " << arrivals);
      CHECK(server.peak_open_connections() <= 2);
      std::vector<std::string> sorted = answered;
      std::sort(sorted.begin(), sorted.end());
      CHECK(sorted == std::vector<std::string>{"/0", "/1", "/2", "/3", "/4", "/5"});
      // libcurl (7.88) keeps the transfers over its per-host cap in a queue of its own, and
      // does not always start them in the order they came: FIFO is the lean client's promise
      // (docs/scenarios.md, "The HTTP client").
      if (impl.h2()) {
        // HTTP/2: one connection carries the six as streams at once; nothing waits for a
        // connection, so the order answers come in is the server's.
        CHECK(server.connections() == 1);
        CHECK(server.requests_on(0) == 6);
        CHECK(read_at_first_answer == 6);
      } else {
        CHECK(read_at_first_answer <= 2);  // the others waited for a free connection
        if (!impl.curl) {
          CHECK(answered == std::vector<std::string>{"/0", "/1", "/2", "/3", "/4", "/5"});
        }
      }
    }
  }
}

TEST_CASE("http conformance: a request past its timeout fails in time, and the client goes on") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(route("/hang", {}));  // an empty script never answers
      auto req = get(server.url("/hang"));
      req.timeout_ms = 300;
      uint64_t start = corral::monotonic_ms();
      HttpResponse r = f.fetch(req);
      uint64_t took = corral::monotonic_ms() - start;
      CHECK(r.status == 0);
      CHECK_FALSE(r.error.empty());
      CHECK(r.timed_out);
      CHECK(took >= 250);
      CHECK(took < 2000);
      CHECK(errors_of(*f.http, server.url("")).timeout == 1);
      CHECK(f.fetch(get(server.url("/"))).body == "fine");
      if (impl.h2()) {
        // HTTP/2: the late stream is reset (CANCEL) and the connection carries the next one.
        CHECK(server.requests().at(0).client_reset == NGHTTP2_CANCEL);
        CHECK(server.connections() == 1);
      }
    }
  }
}

TEST_CASE("http conformance: a cancelled request ends at once, its connection closes, the client goes on") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(route("/hang", {}));  // an empty script never answers
      auto req = get(server.url("/hang"));
      req.timeout_ms = 60000;
      req.tag = 7;
      std::optional<HttpResponse> got;
      f.http->send(req, [&](HttpResponse&& r) { got = std::move(r); });
      REQUIRE(f.run_until([&] { return server.requests().size() == 1; }));
      f.http->cancel(0);  // untagged: nothing
      f.http->cancel(8);  // no such request: nothing
      CHECK_FALSE(got.has_value());
      f.http->cancel(7);
      CHECK_FALSE(got.has_value());  // never from inside cancel()
      REQUIRE(f.run_until([&] { return got.has_value(); }, 5000));
      CHECK(got->status == 0);
      CHECK(got->error == "request cancelled");
      CHECK_FALSE(got->timed_out);
      if (impl.h2()) {
        // HTTP/2: only the request's stream ends (RST_STREAM CANCEL); the connection stays and
        // carries the next request.
        CHECK(f.run_until([&] { return server.requests()[0].client_reset.has_value(); }, 5000));
        CHECK(server.requests()[0].client_reset == NGHTTP2_CANCEL);
        CHECK(server.open_connections() == 1);
      } else {
        CHECK(f.run_until([&] { return server.open_connections() == 0; }, 5000));
      }
      CHECK(f.http->in_flight() == 0);
      CHECK(errors_of(*f.http, server.url("")).timeout == 0);
      CHECK(errors_of(*f.http, server.url("")).reset == 0);
      f.http->cancel(7);  // ended already: nothing
      CHECK(f.fetch(get(server.url("/"))).body == "fine");
      CHECK(server.connections() == (impl.h2() ? 1 : 2));
    }
  }
}

TEST_CASE("http conformance: a cancelled request still waiting for a connection is never sent") {
  ClientOptions opts;
  opts.max_connections_per_host = 1;
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl, opts);
      // HTTP/2 has no request waiting for a connection while one has room for a stream: with
      // room for one stream only, the second request waits as it does over HTTP/1.1.
      H2ServerOptions one_stream;
      one_stream.max_concurrent_streams = 1;
      auto& server = f.serve(route("/hang", {}), one_stream);
      auto hang = get(server.url("/hang"));
      hang.timeout_ms = 60000;
      hang.tag = 1;
      auto queued = get(server.url("/queued"));
      queued.tag = 2;
      std::vector<std::string> ended;
      f.http->send(hang, [&](HttpResponse&& r) { ended.push_back("hang: " + r.error); });
      f.http->send(queued, [&](HttpResponse&& r) { ended.push_back("queued: " + r.error); });
      REQUIRE(f.run_until([&] { return server.requests().size() == 1; }));
      f.http->cancel(2);
      REQUIRE(f.run_until([&] { return ended.size() == 1; }, 5000));
      CHECK(ended[0] == "queued: request cancelled");
      f.http->cancel(1);
      REQUIRE(f.run_until([&] { return ended.size() == 2; }, 5000));
      CHECK(ended[1] == "hang: request cancelled");
      // The connection is free again: the next request is answered, and it is the second the
      // server ever read.
      CHECK(f.fetch(get(server.url("/after"))).body == "fine");
      REQUIRE(server.requests().size() == 2);
      CHECK(server.requests()[1].target == "/after");
    }
  }
}

TEST_CASE("http conformance: an exception thrown by a response callback goes no further") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve(always(ok("{}")));
      bool second = false;
      f.http->send(get(server.url("/")), [](HttpResponse&&) { throw std::runtime_error("boom"); });
      f.http->send(get(server.url("/")), [&](HttpResponse&&) { second = true; });
      REQUIRE(f.run_until([&] { return second; }));
      CHECK(f.http->in_flight() == 0);
    }
  }
}

// --- Redirects (corral-target) --------------------------------------------------------------

TEST_CASE(
    "http conformance: 303 turns a POST into a GET without its body, and the final URL is kept") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      f.start_targets();
      HttpResponse r =
          f.fetch(request("POST", f.base_a + "/redirect?code=303&to=/echo", R"({"a":1})"));
      REQUIRE(r.status == 200);
      CHECK(r.redirects == 1);
      CHECK(r.url == f.base_a + "/echo");
      json echo = json::parse(r.body);
      CHECK(echo["method"] == "GET");
      CHECK(echo["body"] == "");
      CHECK_FALSE(echo["headers"].contains("content-type"));
      CHECK(echo["headers"]["authorization"] == "Bearer t0k");  // same origin: kept
      CHECK(echo["headers"]["x-keep"] == "yes");
    }
  }
}

TEST_CASE("http conformance: 307 and 308 keep the method and the body") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      f.start_targets();
      for (const char* code : {"307", "308"}) {
        INFO(code);
        json echo = f.echo_of(
            request("PUT", f.base_a + "/redirect?code=" + code + "&to=/echo", R"({"a":1})"));
        CHECK(echo["method"] == "PUT");
        CHECK(echo["body"] == R"({"a":1})");
        CHECK(echo["headers"]["content-type"] == "application/json");
      }
    }
  }
}

TEST_CASE("http conformance: 301 and 302 turn a POST into a GET, and keep a PUT") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      f.start_targets();
      auto method_after = [&](const char* method, const char* code) {
        return f.echo_of(
            request(method, f.base_a + "/redirect?code=" + code + "&to=/echo", "x"))["method"];
      };
      CHECK(method_after("POST", "301") == "GET");
      CHECK(method_after("POST", "302") == "GET");
      CHECK(method_after("PUT", "302") == "PUT");
    }
  }
}

TEST_CASE(
    "http conformance: Authorization and Cookie are dropped when a redirect leaves the origin") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      f.start_targets();
      json echo = f.echo_of(get(f.base_a + "/redirect?code=302&to=" + f.base_b + "/echo"));
      CHECK_FALSE(echo["headers"].contains("authorization"));
      CHECK_FALSE(echo["headers"].contains("cookie"));
      CHECK(echo["headers"]["x-keep"] == "yes");
    }
  }
}

TEST_CASE("http conformance: a redirect loop ends as too many redirects") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      f.start_targets();
      auto req = get(f.base_a + "/redirect-loop");
      req.max_redirects = 4;
      HttpResponse r = f.fetch(req);
      CHECK(r.status == 0);
      CHECK(r.error == "too many redirects (4 followed, max_redirects is 4)");
      CHECK(f.requests_a() == 5);
    }
  }
}

TEST_CASE("http conformance: with follow_redirects off the 3xx is the answer") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      f.start_targets();
      auto req = get(f.base_a + "/redirect?code=303&to=/echo");
      req.follow_redirects = false;
      HttpResponse r = f.fetch(req);
      CHECK(r.status == 303);
      CHECK(r.redirects == 0);
      CHECK(f.requests_a() == 1);
    }
  }
}

TEST_CASE("http conformance: a redirect to something other than http or https is refused") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      f.start_targets();
      HttpResponse r = f.fetch(get(f.base_a + "/redirect?code=302&to=file:///etc/passwd"));
      CHECK(r.status == 0);
      CHECK(r.error == "redirect to a URL that is not http or https: file:///etc/passwd");
    }
  }
}

// --- Limits ---------------------------------------------------------------------------------

TEST_CASE("http conformance: a body over max_response is a transport error that names the limit") {
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      f.start_targets();
      auto req = get(f.base_a + "/big?bytes=300000");
      req.max_response_bytes = 100 * 1024;
      HttpResponse r = f.fetch(req);
      CHECK(r.status == 0);
      CHECK(r.error == "response body larger than max_response (100KB)");
      // Within the limit it arrives whole.
      req.max_response_bytes = 400 * 1024;
      r = f.fetch(req);
      CHECK(r.status == 200);
      CHECK(r.body.size() == 300000);
    }
  }
}

TEST_CASE("http conformance: a body over max_response without a Content-Length is cut off too") {
  const std::string body(300000, 'c');
  const std::string chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                              hex(body.size()) + "\r\n" + body + "\r\n0\r\n\r\n";
  const std::string until_close = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body;
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl);
      auto& server = f.serve([&](const RawRequest& req) {
        if (req.target == "/chunked") return Script{send(chunked)};
        return Script{send(until_close), close_connection()};
      });
      for (const char* path : {"/chunked", "/until-close"}) {
        INFO(path);
        auto req = get(server.url(path));
        req.max_response_bytes = 100 * 1024;
        HttpResponse r = f.fetch(req);
        CHECK(r.status == 0);
        CHECK(r.error == "response body larger than max_response (100KB)");
      }
    }
  }
}

TEST_CASE(
    "http conformance: bodies in flight stay within the memory budget, and requests wait instead") {
  ClientOptions opts;
  opts.max_body_bytes = 1 << 20;
  opts.memory_budget_bytes = 1 << 20;
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl, opts);
      f.start_targets();
      int ok = 0, failed = 0;
      std::string errors;
      for (int k = 0; k < 12; ++k) {
        f.http->send(get(f.base_a + "/big?bytes=400000"), [&](HttpResponse&& r) {
          (r.status == 200 && r.body.size() == 400000 ? ok : failed) += 1;
          if (!r.error.empty()) errors += r.error + "\n";
        });
      }
      REQUIRE(f.run_until([&] { return ok + failed == 12; }, 30000));
      INFO(errors);
      CHECK(ok == 12);
      CHECK(f.peak_body_bytes <= opts.memory_budget_bytes);
      CHECK(f.http->body_bytes() == 0);
    }
  }
}

TEST_CASE("http conformance: a body larger than the whole budget fails rather than stalling") {
  ClientOptions opts;
  opts.max_body_bytes = 4 << 20;
  opts.memory_budget_bytes = 1 << 20;
  for (const Impl& impl : kClients) {
    DYNAMIC_SECTION(impl.name) {
      Fixture f(impl, opts);
      f.start_targets();
      HttpResponse r = f.fetch(get(f.base_a + "/big?bytes=3000000"));
      CHECK(r.status == 0);
      CHECK(r.error ==
            "response bodies in flight exceed the worker's response memory budget (1MB)");
      CHECK(f.peak_body_bytes <= opts.memory_budget_bytes);
      // The client goes on.
      HttpResponse after = f.fetch(get(f.base_a + "/big?bytes=1000"));
      INFO(after.error);
      CHECK(after.status == 200);
    }
  }
}
