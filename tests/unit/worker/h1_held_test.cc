// Held connections of the lean client (HttpRequest::pin, worker/http/h1_held.cc): one
// connection per pin, kept between requests, reopened after the server closes it, bound to a
// source address, released by unpin(), and counted per group.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shared/proc.h"
#include "shared/uv/timer.h"
#include "tests/support/raw_http_server.h"
#include "worker/http/curl_client.h"
#include "worker/http/lean_client.h"

using corral::test::close_connection;
using corral::test::RawHttpServer;
using corral::test::RawRequest;
using corral::test::Script;
using corral::test::send;
using corral::worker::BodyBudget;
using corral::worker::ClientOptions;
using corral::worker::CurlClient;
using corral::worker::LeanClient;
using corral::worker::HeldCounts;
using corral::worker::HttpRequest;
using corral::worker::HttpResponse;

namespace {

const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

uint64_t pin(uint32_t group, uint32_t vu) { return (uint64_t{group} << 32) | (vu + 1); }

class Held {
 public:
  explicit Held(RawHttpServer::ScriptFor script, ClientOptions opts = {}) {
    uv_loop_init(&loop);
    curl = std::make_unique<CurlClient>(&loop, opts, &budget);
    http = std::make_unique<LeanClient>(&loop, opts, *curl, budget);
    server = std::make_unique<RawHttpServer>(&loop, std::move(script));
  }
  ~Held() {
    http.reset();
    curl.reset();
    server.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }

  bool run_until(const std::function<bool()>& done, uint64_t timeout_ms = 10000) {
    corral::uv::Timer tick(&loop);
    tick.start(5, 5, [] {});
    uint64_t deadline = corral::monotonic_ms() + timeout_ms;
    while (!done() && corral::monotonic_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    return done();
  }

  // Sends one request of `p` (from `source`, if given); its answer lands in answers[slot].
  void send_on(uint64_t p, size_t slot, std::string source = "") {
    if (answers.size() <= slot) answers.resize(slot + 1);
    answers[slot].reset();
    HttpRequest req;
    req.url = server->url("/held");
    req.pin = p;
    req.source = std::move(source);
    http->send(std::move(req), [this, slot](HttpResponse&& r) { answers[slot] = std::move(r); });
  }
  HttpResponse fetch(uint64_t p, std::string source = "") {
    send_on(p, 0, std::move(source));
    REQUIRE(run_until([&] { return answers[0].has_value(); }));
    return *answers[0];
  }
  bool all_answered() const {
    for (const auto& a : answers) {
      if (!a) return false;
    }
    return true;
  }

  uv_loop_t loop;
  BodyBudget budget;
  std::unique_ptr<CurlClient> curl;
  std::unique_ptr<LeanClient> http;
  std::unique_ptr<RawHttpServer> server;
  std::vector<std::optional<HttpResponse>> answers;
};

RawHttpServer::ScriptFor always_ok() {
  return [](const RawRequest&) { return Script{send(kOk)}; };
}

}  // namespace

TEST_CASE("held connections: each pin keeps its own connection, past the per-host cap") {
  ClientOptions opts;
  opts.max_connections_per_host = 2;
  Held h(always_ok(), opts);
  for (int round = 0; round < 3; ++round) {
    for (uint32_t vu = 0; vu < 5; ++vu) h.send_on(pin(7, vu), vu);
    REQUIRE(h.run_until([&] { return h.all_answered(); }));
    for (const auto& a : h.answers) CHECK(a->status == 200);
  }
  CHECK(h.server->connections() == 5);
  CHECK(h.server->peak_open_connections() == 5);
  for (size_t c = 0; c < 5; ++c) CHECK(h.server->requests_on(c) == 3);
  HeldCounts n = h.http->held(7);
  CHECK(n.open == 5);
  CHECK(n.opened == 5);
  CHECK(n.failed == 0);
  CHECK(n.closed == 0);
  CHECK(h.http->idle_connections() == 0);  // none of them is in the shared pool

  for (uint32_t vu = 0; vu < 5; ++vu) h.http->unpin(pin(7, vu));
  CHECK(h.http->held(7).open == 0);
  CHECK(h.run_until([&] { return h.server->open_connections() == 0; }));
  CHECK(h.http->held(7, true).opened == 5);  // released pins are not lost connections
  CHECK(h.http->held(7).opened == 0);        // forgotten
}

TEST_CASE("held connections: one the server closes is reopened at the pin's next request") {
  Held h([](const RawRequest&) {
    return Script{send("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"),
                  close_connection()};
  });
  CHECK(h.fetch(pin(1, 0)).status == 200);
  CHECK(h.fetch(pin(1, 0)).status == 200);
  CHECK(h.server->connections() == 2);
  HeldCounts n = h.http->held(1);
  CHECK(n.opened == 2);
  CHECK(n.closed == 2);
  CHECK(n.open == 0);
}

TEST_CASE("held connections: a pin connects from its source address") {
  Held h(always_ok());
  CHECK(h.fetch(pin(2, 0), "127.0.0.2").status == 200);
  CHECK(h.fetch(pin(2, 1), "127.0.0.3").status == 200);
  CHECK(h.fetch(pin(2, 2)).status == 200);
  REQUIRE(h.server->requests().size() == 3);
  CHECK(h.server->requests()[0].peer == "127.0.0.2");
  CHECK(h.server->requests()[1].peer == "127.0.0.3");
  CHECK(h.server->requests()[2].peer == "127.0.0.1");

  HttpResponse bad = h.fetch(pin(2, 3), "not-an-address");
  CHECK(bad.status == 0);
  CHECK(bad.error == "invalid source address \"not-an-address\"");
}

TEST_CASE("held connections: a refused connect is an error, counted as failed") {
  Held h(always_ok());
  int dead = h.server->port();
  h.server->close();
  HttpRequest req;
  req.url = "http://127.0.0.1:" + std::to_string(dead) + "/";
  req.pin = pin(3, 0);
  std::optional<HttpResponse> got;
  h.http->send(std::move(req), [&](HttpResponse&& r) { got = std::move(r); });
  REQUIRE(h.run_until([&] { return got.has_value(); }));
  CHECK(got->status == 0);
  CHECK(got->error.find("cannot connect to http://127.0.0.1:") == 0);
  HeldCounts n = h.http->held(3);
  CHECK(n.failed == 1);
  CHECK(n.opened == 0);
  CHECK(n.open == 0);
}

TEST_CASE("held connections: unpin ends a request in flight, and a second request waits not") {
  Held h([](const RawRequest&) { return Script{}; });  // never answers
  h.send_on(pin(4, 0), 0);
  REQUIRE(h.run_until([&] { return h.server->requests().size() == 1; }));
  h.send_on(pin(4, 0), 1);  // the pin's connection is busy
  REQUIRE(h.run_until([&] { return h.answers[1].has_value(); }));
  CHECK(h.answers[1]->error == "held connection 1 is busy with another request");
  CHECK_FALSE(h.answers[0].has_value());

  h.http->unpin(pin(4, 0));
  REQUIRE(h.run_until([&] { return h.answers[0].has_value(); }));
  CHECK(h.answers[0]->error == "the held connection was released");
  CHECK(h.run_until([&] { return h.server->open_connections() == 0; }));
  CHECK(h.http->held(4).open == 0);
}

TEST_CASE("held connections: groups are counted apart") {
  Held h(always_ok());
  CHECK(h.fetch(pin(5, 0)).status == 200);
  CHECK(h.fetch(pin(6, 0)).status == 200);
  CHECK(h.fetch(pin(6, 1)).status == 200);
  CHECK(h.http->held(5).open == 1);
  CHECK(h.http->held(6).open == 2);
  CHECK(h.http->held(8).opened == 0);
}
