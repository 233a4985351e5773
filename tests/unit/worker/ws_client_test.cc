// The worker's WebSocket client against corral-target's WebSocket routes, on one loop.
#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/test_loop.h"
#include "tools/target/target.h"
#include "worker/http/link.h"
#include "worker/http/tls_context.h"
#include "worker/ws/client.h"
#include "worker/ws/socket.h"

using namespace corral;
using corral::worker::ws::Closed;
using corral::worker::ws::Opened;
using corral::worker::ws::OpenRequest;
using corral::worker::ws::Socket;

namespace {

struct Heard final : worker::ws::Events {
  std::optional<Opened> opened;
  std::vector<std::string> messages;
  std::optional<Closed> closed;
  void on_open(Socket&, Opened&& o) override { opened = std::move(o); }
  void on_message(Socket&, ws::Kind, std::string_view data) override {
    messages.emplace_back(data);
  }
  void on_closed(Socket&, Closed&& c) override { closed = std::move(c); }
};

struct Fixture {
  test::TestLoop t;
  target::Target target{&t.loop};
  worker::tls::Contexts contexts;
  worker::Handshakes handshakes{&t.loop};
  worker::ws::Client client{&t.loop, contexts, handshakes};

  Fixture() { REQUIRE(target.listen("127.0.0.1", 0).is_ok()); }
  ~Fixture() { target.close(); }

  std::string url(const std::string& path) {
    return "ws://127.0.0.1:" + std::to_string(target.port()) + path;
  }
  // Opens `path` and runs the loop until the opening is over.
  Socket* open(Heard& heard, const std::string& path, OpenRequest req = {}) {
    req.url = url(path);
    Socket* s = client.open(std::move(req), heard);
    REQUIRE(t.run_until([&] { return heard.opened.has_value(); }));
    return s;
  }
};

}  // namespace

TEST_CASE("ws client: a socket opens, its messages come back, and it closes cleanly") {
  Fixture f;
  Heard heard;
  OpenRequest req;
  req.protocols = {"mqtt", "chat"};
  req.group = 7;
  Socket* s = f.open(heard, "/ws", req);
  REQUIRE(heard.opened->error == "");
  CHECK(heard.opened->status == 101);
  CHECK(heard.opened->protocol == "chat");
  CHECK(f.client.counts(7).open == 1);

  CHECK(s->send(ws::Kind::kText, "{\"n\":1}"));
  CHECK(s->send(ws::Kind::kBinary, std::string(100000, 'b')));
  REQUIRE(f.t.run_until([&] { return heard.messages.size() == 2; }));
  CHECK(heard.messages[0] == "{\"n\":1}");
  CHECK(heard.messages[1] == std::string(100000, 'b'));
  CHECK_FALSE(s->holds_framing_context());  // between messages, no wslay context

  s->close(ws::kCloseNormal, "bye");
  REQUIRE(f.t.run_until([&] { return heard.closed.has_value(); }));
  CHECK(heard.closed->error == "");
  CHECK(heard.closed->code == 1000);  // the server's answer
  CHECK_FALSE(heard.closed->by_server);
  const worker::ws::Counts& c = f.client.counts(7);
  CHECK(c.opened == 1);
  CHECK(c.open == 0);
  CHECK(c.sent == 2);
  CHECK(c.received == 2);
  CHECK(c.closed_by_server == 0);
  f.client.drop(s);
  CHECK(f.t.run_until([&] { return f.target.websockets() == 0; }));
}

TEST_CASE("ws client: a server that pushes, and one that closes with and without a code") {
  Fixture f;
  SECTION("push") {
    Heard heard;
    Socket* s = f.open(heard, "/ws?push_ms=10");
    REQUIRE(f.t.run_until([&] { return heard.messages.size() >= 3; }));
    CHECK(heard.messages[0] == "{\"seq\":1}");
    CHECK(heard.messages[2] == "{\"seq\":3}");
    f.client.drop(s);
  }
  for (auto [code, expected] : {std::pair{1001, 1001}, std::pair{0, 1005}}) {
    DYNAMIC_SECTION("the server closes with code " << code) {
      Heard heard;
      Socket* s = f.open(heard, "/ws?close_after=1&close_code=" + std::to_string(code));
      s->send(ws::Kind::kText, "last");
      REQUIRE(f.t.run_until([&] { return heard.closed.has_value(); }));
      CHECK(heard.messages == std::vector<std::string>{"last"});
      CHECK(heard.closed->code == expected);
      CHECK(heard.closed->by_server);
      CHECK(heard.closed->error == "");
      CHECK(f.client.counts(0).closed_by_server == 1);
      CHECK_FALSE(s->send(ws::Kind::kText, "after"));
      f.client.drop(s);
    }
  }
}

TEST_CASE("ws client: sockets open to a host name, one after another") {
  Fixture f;
  for (int i = 0; i < 2; ++i) {
    Heard heard;
    OpenRequest req;
    req.url = "ws://localhost:" + std::to_string(f.target.port()) + "/ws";
    Socket* s = f.client.open(req, heard);
    REQUIRE(f.t.run_until([&] { return heard.opened.has_value(); }));
    CHECK(heard.opened->error == "");
    f.client.drop(s);
  }
  CHECK(f.client.counts(0).opened == 2);
}

TEST_CASE("ws client: an opening that fails says why") {
  Fixture f;
  Heard heard;
  SECTION("no upgrade") {
    f.open(heard, "/ws/status?code=200");
    CHECK(heard.opened->error == "the server answered 200, not 101 Switching Protocols");
    CHECK(heard.opened->status == 200);
  }
  SECTION("a wrong accept") {
    f.open(heard, "/ws/bad-accept");
    CHECK_THAT(
        heard.opened->error,
        Catch::StartsWith("the server's Sec-WebSocket-Accept is \"bm90IHRoZSByaWdodCBhbnN3ZXI=\""));
  }
  SECTION("no answer in time") {
    OpenRequest req;
    req.timeout_ms = 200;
    f.open(heard, "/hang", req);
    CHECK(heard.opened->error == "the WebSocket did not open within 200 ms");
    CHECK(heard.opened->timed_out);
  }
  SECTION("nobody listening") {
    OpenRequest req;
    req.url = "ws://127.0.0.1:1/ws";
    f.client.open(req, heard);
    REQUIRE(f.t.run_until([&] { return heard.opened.has_value(); }));
    CHECK(heard.opened->error == "connection refused");
  }
  SECTION("a host that does not resolve") {
    OpenRequest req;
    req.url = "ws://no-such-host.invalid/ws";
    f.client.open(req, heard);
    REQUIRE(f.t.run_until([&] { return heard.opened.has_value(); }));
    CHECK_THAT(heard.opened->error,
               Catch::StartsWith("could not resolve host no-such-host.invalid: "));
  }
  SECTION("not a ws URL") {
    OpenRequest req;
    req.url = "http://127.0.0.1/ws";
    f.client.open(req, heard);
    REQUIRE(f.t.run_until([&] { return heard.opened.has_value(); }));
    CHECK(heard.opened->error == "\"http://127.0.0.1/ws\" is not a ws:// or wss:// URL");
  }
  CHECK(f.client.counts(0).failed == 1);
  CHECK(heard.closed == std::nullopt);
}

TEST_CASE("ws client: permessage-deflate is offered, used when agreed, and can be declined") {
  Fixture f;
  SECTION("agreed: a compressed echo, and the server's compressed frames inflated") {
    Heard heard;
    Socket* s = f.open(heard, "/ws?deflate=1");
    REQUIRE(heard.opened->error == "");
    CHECK(heard.opened->deflate);
    const std::string big(300000, 'q');
    CHECK(s->send(ws::Kind::kText, big));
    REQUIRE(f.t.run_until([&] { return heard.messages.size() == 1; }));
    CHECK(heard.messages[0] == big);
    f.client.drop(s);
  }
  SECTION("the server agrees to nothing") {
    Heard heard;
    Socket* s = f.open(heard, "/ws");
    REQUIRE(heard.opened->error == "");
    CHECK_FALSE(heard.opened->deflate);
    f.client.drop(s);
  }
  SECTION("not offered") {
    Heard heard;
    OpenRequest req;
    req.deflate = false;
    Socket* s = f.open(heard, "/ws?deflate=1", req);
    REQUIRE(heard.opened->error == "");
    CHECK_FALSE(heard.opened->deflate);
    for (const auto& [name, value] : heard.opened->headers) {
      CHECK_FALSE(name == "Sec-WebSocket-Extensions");
    }
    f.client.drop(s);
  }
  SECTION("RFC 7692's compressed Hello from a server that agreed") {
    Heard heard;
    f.open(heard, "/ws/raw?deflate=1&hex=c107f248cdc9c90700880203e8");
    REQUIRE(f.t.run_until([&] { return heard.closed.has_value(); }));
    CHECK(heard.messages == std::vector<std::string>{"Hello"});
    CHECK(heard.closed->error == "");
  }
  SECTION("a compressed frame from a server that did not agree") {
    Heard heard;
    f.open(heard, "/ws/raw?hex=c107f248cdc9c90700");
    REQUIRE(f.t.run_until([&] { return heard.closed.has_value(); }));
    CHECK(heard.messages.empty());
    CHECK(heard.closed->error == "a frame broke the WebSocket protocol (closed 1002)");
  }
  SECTION("a compressed frame that does not inflate") {
    Heard heard;
    f.open(heard, "/ws/raw?deflate=1&hex=c102ffff");
    REQUIRE(f.t.run_until([&] { return heard.closed.has_value(); }));
    CHECK_THAT(heard.closed->error, Catch::StartsWith("a compressed message did not inflate: "));
  }
}

TEST_CASE("ws client: hostile frames end the socket with the reason, fragments are joined") {
  Fixture f;
  Heard heard;
  SECTION("text that is not UTF-8") {
    f.open(heard, "/ws/raw?hex=8102fffe");
    REQUIRE(f.t.run_until([&] { return heard.closed.has_value(); }));
    CHECK(heard.closed->error == "a text message was not valid UTF-8 (closed 1007)");
    CHECK(f.client.counts(0).errors == 1);
  }
  SECTION("fragments with a ping between them, in the same bytes as the 101") {
    // "ab" + ping + "cd" + "e", then a close with 1000.
    f.open(heard,
           "/ws/raw?hex=01026162"
           "8900"
           "00026364"
           "800165"
           "880203e8");
    REQUIRE(f.t.run_until([&] { return heard.closed.has_value(); }));
    CHECK(heard.messages == std::vector<std::string>{"abcde"});
    CHECK(heard.closed->code == 1000);
    CHECK(heard.closed->by_server);
  }
}

namespace {

size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

}  // namespace

TEST_CASE(
    "ws client: a dropped socket's descriptor is closed at once, not on the loop's next turn") {
  // A load test's late iterations drop and open thousands of sockets in one callback: each
  // dropped one must give its descriptor back before the next opens.
  Fixture f;
  std::vector<Heard> heard(20);
  std::vector<Socket*> sockets;
  for (Heard& h : heard) sockets.push_back(f.open(h, "/ws"));
  for (const Heard& h : heard) REQUIRE(h.opened->error == "");
  const size_t before = open_fds();
  for (Socket* s : sockets) f.client.drop(s);  // no turn of the loop in between
  CHECK(open_fds() + 20 <= before);
  CHECK(f.t.run_until([&] { return f.target.websockets() == 0; }));
}
