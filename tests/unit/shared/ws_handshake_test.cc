#include <catch2/catch.hpp>

#include "shared/ws/handshake.h"

using namespace corral;
using corral::http::HeaderList;

namespace {

ws::ClientHello hello() {
  ws::ClientHello h;
  h.host_header = "127.0.0.1:8080";
  h.target = "/chat?room=1";
  h.key = "dGhlIHNhbXBsZSBub25jZQ==";  // RFC 6455's example
  return h;
}

HeaderList good_answer() {
  return {{"Upgrade", "websocket"},
          {"Connection", "Upgrade"},
          {"Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="}};
}

std::string error_of(int status, const HeaderList& headers, const ws::ClientHello& h = hello()) {
  auto r = ws::check_answer(status, headers, h);
  return r ? "" : r.status().message();
}

}  // namespace

TEST_CASE("ws handshake: the accept answers the key as RFC 6455 shows, and keys differ") {
  CHECK(ws::accept_for("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  std::string a = ws::make_key(), b = ws::make_key();
  CHECK(a.size() == 24);
  CHECK(a != b);
}

TEST_CASE("ws handshake: the request asks for an upgrade, with protocols, deflate and headers") {
  ws::ClientHello h = hello();
  h.protocols = {"chat", "echo"};
  h.headers = {"Cookie: a=1"};
  h.offer_deflate = true;
  std::string out;
  ws::append_request(h, out);
  CHECK(out.rfind("GET /chat?room=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n", 0) == 0);
  CHECK_THAT(out, Catch::Contains("Upgrade: websocket\r\nConnection: Upgrade\r\n"));
  CHECK_THAT(out, Catch::Contains("Sec-WebSocket-Version: 13\r\n"));
  CHECK_THAT(out, Catch::Contains("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"));
  CHECK_THAT(out, Catch::Contains("Sec-WebSocket-Protocol: chat, echo\r\n"));
  CHECK_THAT(out, Catch::Contains("Sec-WebSocket-Extensions: permessage-deflate; "
                                  "client_no_context_takeover; server_no_context_takeover\r\n"));
  CHECK_THAT(out, Catch::EndsWith("Cookie: a=1\r\n\r\n"));
}

TEST_CASE("ws handshake: a good answer is agreed, with the protocol the server chose") {
  ws::ClientHello h = hello();
  h.protocols = {"chat", "echo"};
  HeaderList answer = good_answer();
  answer.emplace_back("sec-websocket-protocol", "echo");
  answer[0].second = "WebSocket";            // case does not matter
  answer[1].second = "keep-alive, Upgrade";  // a list
  auto agreed = ws::check_answer(101, answer, h);
  REQUIRE(agreed.is_ok());
  CHECK(agreed->protocol == "echo");
  CHECK_FALSE(agreed->deflate.on);
}

TEST_CASE("ws handshake: each broken answer is refused with words that name what is wrong") {
  CHECK(error_of(200, good_answer()) == "the server answered 200, not 101 Switching Protocols");
  HeaderList h = good_answer();
  h[0].second = "h2c";
  CHECK(error_of(101, h) == "the server's 101 has Upgrade: \"h2c\", not websocket");
  h = good_answer();
  h.erase(h.begin() + 1);
  CHECK(error_of(101, h) == "the server's 101 has Connection: \"\", without upgrade");
  h = good_answer();
  h[2].second = "bm90IHRoZSByaWdodCBhbnN3ZXI=";
  CHECK(error_of(101, h) ==
        "the server's Sec-WebSocket-Accept is \"bm90IHRoZSByaWdodCBhbnN3ZXI=\", not "
        "\"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\" (the answer to this connection's key)");
  h = good_answer();
  h.emplace_back("Sec-WebSocket-Protocol", "mqtt");
  CHECK(error_of(101, h) ==
        "the server chose the subprotocol \"mqtt\", which corral did not offer");
  h = good_answer();
  h.emplace_back("Sec-WebSocket-Extensions", "permessage-deflate");
  CHECK(error_of(101, h) ==
        "the server chose the extension \"permessage-deflate\", which corral did not offer");
}

TEST_CASE("ws handshake: permessage-deflate is agreed only as offered") {
  ws::ClientHello h = hello();
  h.offer_deflate = true;
  HeaderList a = good_answer();
  a.emplace_back("Sec-WebSocket-Extensions",
                 "permessage-deflate; server_no_context_takeover; server_max_window_bits=10");
  auto agreed = ws::check_answer(101, a, h);
  REQUIRE(agreed.is_ok());
  CHECK(agreed->deflate.on);
  CHECK(agreed->deflate.server_no_context_takeover);
  CHECK(agreed->deflate.server_max_window_bits == 10);

  a.back().second = "permessage-deflate";
  CHECK(error_of(101, a, h) ==
        "the server accepted permessage-deflate without server_no_context_takeover, which "
        "corral's offer asks for");
  a.back().second = "permessage-deflate; server_no_context_takeover; server_max_window_bits=16";
  CHECK(error_of(101, a, h) ==
        "Sec-WebSocket-Extensions: permessage-deflate parameter \"server_max_window_bits=16\" is "
        "not one RFC 7692 allows");
  a.back().second = "permessage-deflate; server_no_context_takeover; client_max_window_bits=9";
  CHECK(error_of(101, a, h) ==
        "the server answered permessage-deflate with client_max_window_bits, which corral's offer "
        "does not carry");
}

TEST_CASE("ws handshake: a server agrees to the first permessage-deflate offer it can keep") {
  const std::string agreed =
      "permessage-deflate; server_no_context_takeover; client_no_context_takeover";
  CHECK(ws::deflate_answer("") == "");
  CHECK(ws::deflate_answer("x-webkit-deflate-frame") == "");
  CHECK(ws::deflate_answer("permessage-deflate") == agreed);
  // What browsers and Node's ws client offer.
  CHECK(ws::deflate_answer("permessage-deflate; client_max_window_bits") == agreed);
  CHECK(ws::deflate_answer(
            "permessage-deflate; client_no_context_takeover; server_no_context_takeover") ==
        agreed);
  // A smaller window for the server's compressor is not kept: the next offer is.
  CHECK(ws::deflate_answer("permessage-deflate; server_max_window_bits=10") == "");
  CHECK(ws::deflate_answer("permessage-deflate; server_max_window_bits=10, permessage-deflate") ==
        agreed);
  CHECK(ws::deflate_answer("permessage-deflate; mystery") == "");
}

TEST_CASE("ws handshake: a server answers an upgrade request, and says what a bad one lacks") {
  http::Request req;
  req.method = "GET";
  req.headers = {{"Upgrade", "websocket"},
                 {"Connection", "Upgrade"},
                 {"Sec-WebSocket-Version", "13"},
                 {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                 {"Sec-WebSocket-Protocol", "mqtt, chat"}};
  REQUIRE(ws::is_upgrade(req));
  auto h = ws::answer_upgrade(req, {"echo", "chat"});
  REQUIRE(h.is_ok());
  CHECK(*h == HeaderList{{"Upgrade", "websocket"},
                         {"Connection", "Upgrade"},
                         {"Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="},
                         {"Sec-WebSocket-Protocol", "chat"}});
  req.headers[2].second = "8";
  CHECK(ws::answer_upgrade(req).status().message() ==
        "a WebSocket request needs \"Sec-WebSocket-Version: 13\"");
  req.method = "POST";
  CHECK_FALSE(ws::is_upgrade(req));
}
