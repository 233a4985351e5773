// Framing against frames written out by hand (what a server sends: unmasked) and against a
// Framing of the other role.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "shared/ws/framing.h"

using namespace corral;

namespace {

struct Heard final : ws::Framing::Peer {
  std::vector<std::pair<ws::Kind, std::string>> messages;
  std::vector<std::string> pongs;
  int closes = 0;
  uint16_t code = 0;
  std::string reason;
  void on_message(ws::Kind kind, std::string_view data) override {
    messages.emplace_back(kind, std::string(data));
  }
  void on_pong(std::string_view data) override { pongs.emplace_back(data); }
  void on_close_received(uint16_t c, std::string_view r) override {
    ++closes;
    code = c;
    reason = r;
  }
};

// An unmasked frame: FIN and opcode, then a payload of under 126 bytes.
std::string frame(uint8_t first, std::string_view payload) {
  std::string f;
  f.push_back(static_cast<char>(first));
  f.push_back(static_cast<char>(payload.size()));
  f += payload;
  return f;
}

struct Client {
  Heard heard;
  ws::Framing framing{ws::Role::kClient, 1000, heard};
  std::string out;
  Status feed(std::string_view bytes) { return framing.feed(bytes.data(), bytes.size(), out); }
};

}  // namespace

TEST_CASE("ws framing: fragments are joined, and a ping between them is answered") {
  Client c;
  REQUIRE(c.feed(frame(0x01, "abc")).is_ok());  // text, not final
  CHECK(c.framing.holds_context());             // a message is half received
  REQUIRE(c.feed(frame(0x89, "hi")).is_ok());   // a ping in the middle
  CHECK(c.out.size() == 2 + 4 + 2);             // the pong: masked, as a client's frames are
  CHECK(static_cast<uint8_t>(c.out[0]) == 0x8a);
  REQUIRE(c.feed(frame(0x00, "def") + frame(0x80, "!")).is_ok());
  REQUIRE(c.heard.messages.size() == 1);
  CHECK(c.heard.messages[0] == std::make_pair(ws::Kind::kText, std::string("abcdef!")));
  CHECK_FALSE(c.framing.holds_context());  // between messages it holds nothing
}

TEST_CASE("ws framing: bytes may come one at a time, and a frame across calls is kept") {
  Client c;
  std::string bytes = frame(0x82, std::string("\x00\x01\x02", 3)) + frame(0x81, "ok");
  for (char b : bytes) {
    REQUIRE(c.feed(std::string_view(&b, 1)).is_ok());
    if (c.heard.messages.empty()) CHECK(c.framing.holds_context());
  }
  REQUIRE(c.heard.messages.size() == 2);
  CHECK(c.heard.messages[0].first == ws::Kind::kBinary);
  CHECK(c.heard.messages[0].second == std::string("\x00\x01\x02", 3));
  CHECK(c.heard.messages[1].second == "ok");
  CHECK_FALSE(c.framing.holds_context());
}

TEST_CASE("ws framing: a server's close is answered with its code, or 1005 when it has none") {
  Client c;
  REQUIRE(c.feed(frame(0x88, std::string("\x03\xe9", 2) + "bye")).is_ok());  // 1001
  CHECK(c.heard.code == 1001);
  CHECK(c.heard.reason == "bye");
  CHECK(c.framing.close_received());
  CHECK(c.framing.close_sent());
  CHECK(static_cast<uint8_t>(c.out[0]) == 0x88);

  Client bare;
  REQUIRE(bare.feed(frame(0x88, "")).is_ok());
  CHECK(bare.heard.code == ws::kCloseNoStatus);
  CHECK(bare.framing.code_received() == ws::kCloseNoStatus);
}

TEST_CASE("ws framing: a peer that breaks the protocol is told why, and so is the caller") {
  SECTION("a close code no endpoint may send") {
    Client c;
    Status s = c.feed(frame(0x88, std::string("\x03\xe7", 2)));  // 999
    CHECK(s.message() == "the close frame carried an invalid code (closed 1002)");
  }
  SECTION("text that is not UTF-8") {
    Client c;
    Status s = c.feed(frame(0x81, "\xff\xfe"));
    CHECK(s.message() == "a text message was not valid UTF-8 (closed 1007)");
    CHECK(c.heard.messages.empty());
  }
  SECTION("a close reason that is not UTF-8") {
    Client c;
    Status s = c.feed(frame(0x88, std::string("\x03\xe8\xff", 3)));
    CHECK(s.message() == "the close frame's reason was not valid UTF-8 (closed 1007)");
  }
  SECTION("a message over max_message") {
    Client c;
    // Binary, 1001 bytes (a 16-bit length); wslay looks at the length with the first bytes.
    std::string big = "\x82\x7e\x03\xe9" + std::string(100, 'x');
    Status s = c.feed(big);
    CHECK(s.message() == "a message was larger than max_message, 1000 bytes (closed 1009)");
  }
  SECTION("a masked frame from a server") {
    Client c;
    Status s = c.feed(std::string("\x81\x81\x01\x02\x03\x04\x60", 7));
    CHECK(s.message() == "a frame broke the WebSocket protocol (closed 1002)");
  }
  SECTION("a continuation with no message begun") {
    Client c;
    Status s = c.feed(frame(0x80, "x"));
    CHECK(s.message() == "a frame broke the WebSocket protocol (closed 1002)");
  }
}

TEST_CASE("ws framing: a client and a server talk, and close in both directions") {
  Heard client_heard, server_heard;
  ws::Framing client(ws::Role::kClient, 1 << 20, client_heard);
  ws::Framing server(ws::Role::kServer, 1 << 20, server_heard);
  std::string to_server, to_client;
  std::string big(70000, 'x');  // a 64-bit length
  client.send(ws::Kind::kText, "hello", to_server);
  client.send(ws::Kind::kBinary, big, to_server);
  CHECK_FALSE(client.holds_context());  // sent whole: nothing kept
  REQUIRE(server.feed(to_server.data(), to_server.size(), to_client).is_ok());
  REQUIRE(server_heard.messages.size() == 2);
  CHECK(server_heard.messages[0].second == "hello");
  CHECK(server_heard.messages[1].second == big);

  to_server.clear();
  server.send(ws::Kind::kText, "welcome", to_client);
  client.ping("p", to_server);
  REQUIRE(server.feed(to_server.data(), to_server.size(), to_client).is_ok());  // its pong
  REQUIRE(client.feed(to_client.data(), to_client.size(), to_server).is_ok());
  CHECK(client_heard.messages.at(0).second == "welcome");
  CHECK(client_heard.pongs == std::vector<std::string>{"p"});

  to_server.clear();
  to_client.clear();
  client.close(ws::kCloseNormal, "done", to_server);
  CHECK(client.close_sent());
  REQUIRE(server.feed(to_server.data(), to_server.size(), to_client).is_ok());
  CHECK(server_heard.code == 1000);
  CHECK(server_heard.reason == "done");
  REQUIRE(client.feed(to_client.data(), to_client.size(), to_server).is_ok());
  CHECK(client.close_received());
  CHECK(client.code_received() == 1000);
  to_server.clear();
  client.send(ws::Kind::kText, "too late", to_server);
  CHECK(to_server.empty());
}

namespace {

// Answers every message at once, from inside feed(): wslay is still on the stack.
struct Echo final : ws::Framing::Peer {
  ws::Framing* framing = nullptr;
  std::string* out = nullptr;
  void on_message(ws::Kind kind, std::string_view data) override {
    framing->send(kind, data, *out);
  }
  void on_close_received(uint16_t, std::string_view) override {}
};

}  // namespace

TEST_CASE("ws framing: a message sent from inside feed() keeps the context until feed returns") {
  Echo echo;
  ws::Framing server(ws::Role::kServer, 1 << 20, echo);
  std::string to_client;
  echo.framing = &server;
  echo.out = &to_client;
  Heard heard;
  ws::Framing client(ws::Role::kClient, 1 << 20, heard);
  std::string to_server;
  for (int i = 0; i < 3; ++i) client.send(ws::Kind::kText, "m" + std::to_string(i), to_server);
  REQUIRE(server.feed(to_server.data(), to_server.size(), to_client).is_ok());
  CHECK_FALSE(server.holds_context());  // released once feed() was over
  REQUIRE(client.feed(to_client.data(), to_client.size(), to_server).is_ok());
  CHECK(heard.messages.size() == 3);
  CHECK(heard.messages[2].second == "m2");
}

namespace {

// RFC 7692 7.2.3.1: "Hello" compressed, in one frame with RSV1 set (0xc1: FIN, RSV1, text).
const std::string kHelloDeflated("\xc1\x07\xf2\x48\xcd\xc9\xc9\x07\x00", 9);

struct DeflateClient : Client {
  DeflateClient() { framing.use_deflate(true); }
};

}  // namespace

TEST_CASE("ws framing: with permessage-deflate, the RFC's example inflates, fragments too") {
  DeflateClient c;
  REQUIRE(c.feed(kHelloDeflated).is_ok());
  REQUIRE(c.heard.messages.size() == 1);
  CHECK(c.heard.messages[0] == std::make_pair(ws::Kind::kText, std::string("Hello")));
  // RFC 7692 7.2.3.1, the same message in two fragments: RSV1 on the first only.
  REQUIRE(
      c.feed(std::string("\x41\x03\xf2\x48\xcd", 5) + std::string("\x80\x04\xc9\xc9\x07\x00", 6))
          .is_ok());
  REQUIRE(c.heard.messages.size() == 2);
  CHECK(c.heard.messages[1].second == "Hello");
  // A message sent uncompressed (RSV1 clear) is taken as it is.
  REQUIRE(c.feed(frame(0x81, "plain")).is_ok());
  CHECK(c.heard.messages.at(2).second == "plain");
  CHECK_FALSE(c.framing.holds_context());
}

TEST_CASE("ws framing: with permessage-deflate, messages go out compressed and come back whole") {
  Heard client_heard, server_heard;
  ws::Framing client(ws::Role::kClient, 1 << 20, client_heard);
  ws::Framing server(ws::Role::kServer, 1 << 20, server_heard);
  client.use_deflate(true);
  server.use_deflate(true);
  std::string to_server, to_client;
  const std::string json =
      R"({"type":"tick","user":"u-000001","payload":")" + std::string(2000, 'a') + R"("})";
  client.send(ws::Kind::kText, json, to_server);
  // Compressed (RSV1 set, 0xc1), and far smaller than the message: 2 KB of one letter.
  CHECK(static_cast<uint8_t>(to_server[0]) == 0xc1);
  CHECK(to_server.size() < 100);
  std::string noise;
  for (int i = 0; i < 200000; ++i) noise.push_back(static_cast<char>((i * 7919 + i / 13) & 0xff));
  client.send(ws::Kind::kBinary, noise, to_server);  // more than the inflater's 16 KB steps
  REQUIRE(server.feed(to_server.data(), to_server.size(), to_client).is_ok());
  REQUIRE(server_heard.messages.size() == 2);
  CHECK(server_heard.messages[0] == std::make_pair(ws::Kind::kText, json));
  CHECK(server_heard.messages[1] == std::make_pair(ws::Kind::kBinary, noise));

  server.send(ws::Kind::kText, "welcome", to_client);
  CHECK(static_cast<uint8_t>(to_client[0]) == 0xc1);  // a server's frames are not masked
  REQUIRE(client.feed(to_client.data(), to_client.size(), to_server).is_ok());
  CHECK(client_heard.messages.at(0).second == "welcome");
  CHECK_FALSE(client.holds_context());  // no zlib state is the socket's either
}

TEST_CASE("ws framing: a compressed message that is hostile is refused with the reason") {
  SECTION("bytes that are no deflate stream") {
    DeflateClient c;
    Status s = c.feed(std::string("\xc1\x02\xff\xff", 4));
    CHECK_THAT(s.message(), Catch::StartsWith("a compressed message did not inflate: "));
    CHECK_THAT(s.message(), Catch::EndsWith("(closed 1007)"));
    CHECK(c.heard.messages.empty());
    REQUIRE(c.out.size() >= 4);
    CHECK(static_cast<uint8_t>(c.out[0]) == 0x88);  // the close went out
  }
  SECTION("a small frame that inflates past max_message") {
    Heard h;
    ws::Framing server(ws::Role::kServer, 1 << 20, h);
    server.use_deflate(true);
    std::string bomb;
    server.send(ws::Kind::kBinary, std::string(5000, 0), bomb);  // about 30 bytes
    REQUIRE(bomb.size() < 100);
    DeflateClient c;  // max_message 1000
    Status s = c.feed(bomb);
    CHECK(s.message() ==
          "a compressed message inflated past max_message, 1000 bytes (closed 1009)");
    CHECK(c.heard.messages.empty());
  }
  SECTION("compressed text that is not UTF-8") {
    Heard h;
    ws::Framing server(ws::Role::kServer, 1 << 20, h);
    server.use_deflate(true);
    std::string bytes;
    server.send(ws::Kind::kText, "\xff\xfe", bytes);
    DeflateClient c;
    Status s = c.feed(bytes);
    CHECK(s.message() == "a compressed text message was not valid UTF-8 (closed 1007)");
  }
  SECTION("RSV1 when permessage-deflate was not agreed") {
    Client c;
    Status s = c.feed(kHelloDeflated);
    CHECK(s.message() == "a frame broke the WebSocket protocol (closed 1002)");
  }
  SECTION("RSV1 on a ping") {
    DeflateClient c;
    Status s = c.feed(frame(0xc9, ""));
    CHECK(s.message() == "a frame broke the WebSocket protocol (closed 1002)");
  }
}

TEST_CASE("ws framing: a context let go serves the thread's next Framing, with its own settings") {
  // Each case lets a context go at a frame boundary, then a new Framing takes it (the thread's
  // spares are last in, first out) and must behave as with a context of its own.
  const std::string long_text = frame(0x81, std::string(120, 'x'));
  SECTION("the next one's cap holds, not the first one's") {
    {
      Client roomy;  // a cap of 1,000
      REQUIRE(roomy.feed(long_text).is_ok());
      CHECK(roomy.heard.messages.size() == 1);
      CHECK_FALSE(roomy.framing.holds_context());
    }
    Heard heard;
    ws::Framing tight(ws::Role::kClient, 100, heard);
    std::string out;
    Status s = tight.feed(long_text.data(), long_text.size(), out);
    CHECK(s.message() == "a message was larger than max_message, 100 bytes (closed 1009)");
  }
  SECTION("compression agreed by the first is not the next one's") {
    {
      DeflateClient agreed;
      REQUIRE(agreed.feed(kHelloDeflated).is_ok());
      CHECK(agreed.heard.messages.at(0).second == "Hello");
    }
    Client plain;
    Status s = plain.feed(kHelloDeflated);
    CHECK(s.message() == "a frame broke the WebSocket protocol (closed 1002)");
    Client plain_again;  // and the reverse: the plain one's context allows RSV1 again
    plain_again.framing.use_deflate(true);
    REQUIRE(plain_again.feed(kHelloDeflated).is_ok());
    CHECK(plain_again.heard.messages.at(0).second == "Hello");
  }
  SECTION("a context that closed is not passed on") {
    {
      Client closed;
      closed.framing.close(ws::kCloseNormal, "", closed.out);
      REQUIRE(closed.feed(frame(0x88, std::string("\x03\xe8", 2))).is_ok());
      CHECK(closed.framing.close_received());
    }
    Client next;
    next.framing.send(ws::Kind::kText, "still here", next.out);
    REQUIRE(next.out.size() == 2 + 4 + 10);  // a masked text frame: wslay's writing is on
    CHECK(static_cast<uint8_t>(next.out[0]) == 0x81);
  }
}
