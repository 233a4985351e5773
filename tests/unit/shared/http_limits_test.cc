// The HTTP server against hostile or broken clients: bad versions, slow clients, too many
// headers, too many connections; and what it tells the handler about where a request came
// from. Real loop, real sockets (see http_test_client.h). Timeouts are set small so that the
// tests are quick; the bounds checked around them leave room for a loaded machine.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "shared/http/server.h"
#include "tests/unit/shared/http_test_client.h"

namespace corral::http {

using namespace testing;

namespace {

using std::chrono::milliseconds;

milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

// What a client that sends `bytes` one at a time, `every` apart, saw: the first reply (or
// none), whether the server then closed, and when the server first had something to say.
struct Trickled {
  std::optional<Reply> reply;
  bool closed = false;
  milliseconds after_connect{0};     // until the server spoke or closed
  milliseconds after_first_byte{0};  // the same, from the first byte sent
  size_t sent = 0;                   // bytes sent before that
};

// Connects, waits `first_after` (failing if the server speaks before), then trickles `bytes`.
Trickled trickle(int port, const std::string& bytes, milliseconds every,
                 milliseconds first_after = milliseconds(0)) {
  Trickled out;
  auto connected = Clock::now();
  Client c(connect_tcp(port));
  if (first_after.count() > 0 && c.readable(first_after)) return out;
  auto first_byte = Clock::now();
  for (char b : bytes) {
    if (!c.send(std::string_view(&b, 1))) break;
    ++out.sent;
    if (c.readable(every)) break;
  }
  out.after_connect = since(connected);
  out.after_first_byte = since(first_byte);
  out.reply = c.read();
  out.closed = c.closed_by_server();
  return out;
}

std::string error_of(const std::optional<Reply>& r) {
  return r ? r->json().value("error", std::string("(no error)")) : std::string("(no reply)");
}

// Counts handler calls and answers each at once with its path.
struct Counted {
  int calls = 0;
  Handler handler() {
    return [this](Request&& req, Responder respond) {
      ++calls;
      echo(std::move(req), respond);
    };
  }
};

struct Answer {
  std::optional<Reply> reply;
  bool closed = false;
};

Answer send_and_read(int port, const std::string& request) {
  Answer out;
  Client c(connect_tcp(port));
  c.send(request);
  out.reply = c.read();
  out.closed = c.closed_by_server();
  return out;
}

}  // namespace

TEST_CASE("http server: a request line without a version gets 400") {
  TestLoop loop;
  Counted counted;
  Server server(loop.get(), counted.handler());
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  // An HTTP/0.9 client sends the line alone and waits: the answer must not wait for more.
  Answer a = run_client(loop, [&] { return send_and_read(server.tcp_port(), "GET /health\r\n"); });

  REQUIRE(a.reply);
  CHECK(a.reply->status == 400);
  CHECK(error_of(a.reply) == "malformed HTTP request: the request line has no HTTP version");
  CHECK(a.reply->header("Connection") == "close");
  CHECK(a.closed);
  CHECK(counted.calls == 0);
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: a request for a version other than HTTP/1.0 or 1.1 gets 505") {
  TestLoop loop;
  Counted counted;
  Server server(loop.get(), counted.handler());
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  std::string request, version;
  SECTION("HTTP/3.0 with headers") {
    request = "GET /health HTTP/3.0\r\nHost: t\r\n\r\n";
    version = "HTTP/3.0";
  }
  SECTION("HTTP/2.0 without headers") {
    request = "GET /health HTTP/2.0\r\n\r\n";
    version = "HTTP/2.0";
  }
  SECTION("HTTP/1.2") {
    request = "GET /health HTTP/1.2\r\nHost: t\r\n\r\n";
    version = "HTTP/1.2";
  }
  SECTION("HTTP/0.9 spelt out") {
    request = "GET /health HTTP/0.9\r\nHost: t\r\n\r\n";
    version = "HTTP/0.9";
  }
  Answer a = run_client(loop, [&] { return send_and_read(server.tcp_port(), request); });

  REQUIRE(a.reply);
  CHECK(a.reply->status == 505);
  CHECK(error_of(a.reply) == "HTTP version not supported: " + version);
  CHECK(a.closed);
  CHECK(counted.calls == 0);
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: a connection that sends nothing is closed at the header timeout") {
  TestLoop loop;
  ServerOptions opts;
  opts.header_timeout_ms = 300;
  opts.idle_timeout_ms = 5000;  // would be the only limit without a header timeout
  Server server(loop.get(), echo, opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  struct Seen {
    bool closed_without_a_word = false;
    milliseconds after{0};
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    auto start = Clock::now();
    Client c(connect_tcp(server.tcp_port()));
    out.closed_without_a_word = c.closed_by_server();  // EOF, no 408: nothing to answer
    out.after = since(start);
    return out;
  });

  CHECK(s.closed_without_a_word);
  CHECK(s.after >= milliseconds(250));
  CHECK(s.after < milliseconds(2000));
  REQUIRE(loop.run_until([&] { return server.connection_count() == 0; }));
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: a client trickling its headers is cut off at the header timeout") {
  TestLoop loop;
  ServerOptions opts;
  opts.header_timeout_ms = 300;
  opts.idle_timeout_ms = 200;  // longer than the gaps: the client never goes idle
  Counted counted;
  Server server(loop.get(), counted.handler(), opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  std::string request = get("/slow", "X-Padding: " + std::string(200, 'p') + "\r\n");
  Trickled t =
      run_client(loop, [&] { return trickle(server.tcp_port(), request, milliseconds(50)); });

  REQUIRE(t.reply);
  CHECK(t.reply->status == 408);
  CHECK(error_of(t.reply) == "request headers not received within 300 ms");
  CHECK(t.reply->header("Connection") == "close");
  CHECK(t.closed);
  CHECK(t.sent < request.size());
  CHECK(t.after_connect >= milliseconds(250));
  CHECK(t.after_connect < milliseconds(1500));
  CHECK(counted.calls == 0);
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: the first request's header timeout counts from the accept") {
  TestLoop loop;
  ServerOptions opts;
  opts.header_timeout_ms = 600;
  Server server(loop.get(), echo, opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  // Silent for 400 ms, then slow: cut off about 200 ms after the first byte, not 600.
  std::string request = get("/slow", "X-Padding: " + std::string(200, 'p') + "\r\n");
  Trickled t = run_client(loop, [&] {
    return trickle(server.tcp_port(), request, milliseconds(50), milliseconds(400));
  });

  REQUIRE(t.reply);
  CHECK(t.reply->status == 408);
  CHECK(t.after_connect >= milliseconds(550));
  CHECK(t.after_first_byte < milliseconds(500));
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: a later request's header timeout counts from its first byte") {
  TestLoop loop;
  ServerOptions opts;
  opts.header_timeout_ms = 300;
  opts.idle_timeout_ms = 5000;
  Server server(loop.get(), echo, opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  struct Seen {
    std::string first;
    bool quiet_while_idle = false;
    std::optional<Reply> second;
    milliseconds after_first_byte{0};
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    Client c(connect_tcp(server.tcp_port()));
    c.send(get("/first"));
    out.first = body_path(c.read());
    out.quiet_while_idle = !c.readable(milliseconds(400));  // past the header timeout
    auto first_byte = Clock::now();
    for (char b : get("/second", "X-Padding: " + std::string(200, 'p') + "\r\n")) {
      if (!c.send(std::string_view(&b, 1)) || c.readable(milliseconds(50))) break;
    }
    out.after_first_byte = since(first_byte);
    out.second = c.read();
    return out;
  });

  CHECK(s.first == "/first");
  CHECK(s.quiet_while_idle);
  REQUIRE(s.second);
  CHECK(s.second->status == 408);
  CHECK(s.after_first_byte >= milliseconds(250));
  CHECK(s.after_first_byte < milliseconds(1500));
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: a body trickling in is cut off at the body timeout") {
  TestLoop loop;
  ServerOptions opts;
  opts.body_timeout_ms = 300;
  opts.header_timeout_ms = 5000;
  opts.idle_timeout_ms = 200;  // longer than the gaps: the client never goes idle
  Counted counted;
  Server server(loop.get(), counted.handler(), opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  struct Seen {
    bool headers_sent = false;
    Trickled body;
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    Client c(connect_tcp(server.tcp_port()));
    out.headers_sent = c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n");
    auto start = Clock::now();
    for (int i = 0; i < 100; ++i) {
      if (!c.send("x")) break;
      ++out.body.sent;
      if (c.readable(milliseconds(50))) break;
    }
    out.body.after_first_byte = since(start);
    out.body.reply = c.read();
    out.body.closed = c.closed_by_server();
    return out;
  });

  CHECK(s.headers_sent);
  REQUIRE(s.body.reply);
  CHECK(s.body.reply->status == 408);
  CHECK(error_of(s.body.reply) == "request body not received within 300 ms");
  CHECK(s.body.closed);
  CHECK(s.body.sent < 100);
  CHECK(s.body.after_first_byte >= milliseconds(250));
  CHECK(s.body.after_first_byte < milliseconds(1500));
  CHECK(counted.calls == 0);
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: a well-behaved keep-alive client is not affected by the read timeouts") {
  TestLoop loop;
  ServerOptions opts;
  opts.header_timeout_ms = 300;
  opts.body_timeout_ms = 300;
  opts.idle_timeout_ms = 5000;
  Server server(loop.get(), echo, opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  // One connection for well past both timeouts, with pauses between requests and within them.
  struct Seen {
    std::vector<int> statuses;
    bool quiet_in_headers = true, quiet_in_body = true;
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    Client c(connect_tcp(server.tcp_port()));
    auto start = Clock::now();
    while (since(start) < milliseconds(1200)) {
      c.send("GET /get HTTP/1.1\r\n");
      out.quiet_in_headers = out.quiet_in_headers && !c.readable(milliseconds(100));
      c.send("Host: t\r\n\r\n");
      auto r = c.read();
      out.statuses.push_back(r ? r->status : 0);
      c.send("POST /post HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nab");
      out.quiet_in_body = out.quiet_in_body && !c.readable(milliseconds(100));
      c.send("cd");
      r = c.read();
      out.statuses.push_back(r ? r->status : 0);
      if (c.readable(milliseconds(150))) break;  // idle between requests; the server is quiet
    }
    return out;
  });

  CHECK(s.statuses.size() >= 4);
  CHECK(s.statuses == std::vector<int>(s.statuses.size(), 200));
  CHECK(s.quiet_in_headers);
  CHECK(s.quiet_in_body);
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: more headers than max_header_count get 431 naming the cap") {
  TestLoop loop;
  ServerOptions opts;
  opts.max_header_count = 3;
  Counted counted;
  Server server(loop.get(), counted.handler(), opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  struct Seen {
    Answer at_cap, over_cap;
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    Client c(connect_tcp(server.tcp_port()));
    c.send(get("/three", "A: 1\r\nB: 2\r\n"));  // with Host: 3
    out.at_cap.reply = c.read();
    out.over_cap = send_and_read(server.tcp_port(), get("/four", "A: 1\r\nB: 2\r\nC: 3\r\n"));
    return out;
  });

  REQUIRE(s.at_cap.reply);
  CHECK(s.at_cap.reply->status == 200);
  REQUIRE(s.over_cap.reply);
  CHECK(s.over_cap.reply->status == 431);
  CHECK(error_of(s.over_cap.reply) == "request has more than 3 headers");
  CHECK(s.over_cap.closed);
  CHECK(counted.calls == 1);
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: at the connection cap, the oldest idle connection makes room") {
  TestLoop loop;
  ServerOptions opts;
  opts.max_connections = 2;
  Server server(loop.get(), echo, opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));
  int port = server.tcp_port();

  struct Seen {
    std::string first, second, third, second_again;
    bool first_closed = false;
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    Client c1(connect_tcp(port));
    c1.send(get("/1"));
    out.first = body_path(c1.read());
    Client c2(connect_tcp(port));
    c2.send(get("/2"));
    out.second = body_path(c2.read());
    Client c3(connect_tcp(port));  // both others idle: c1 has been the longest
    c3.send(get("/3"));
    out.third = body_path(c3.read());
    out.first_closed = c1.closed_by_server();
    c2.send(get("/2-again"));
    out.second_again = body_path(c2.read());
    return out;
  });

  CHECK(s.first == "/1");
  CHECK(s.second == "/2");
  CHECK(s.third == "/3");
  CHECK(s.first_closed);
  CHECK(s.second_again == "/2-again");
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: the connection cap counts each listener apart") {
  TestLoop loop;
  char dir_template[] = "/tmp/corral-http-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  std::string path = std::string(dir_template) + "/api.sock";
  ServerOptions opts;
  opts.max_connections = 1;
  Server server(loop.get(), echo, opts);
  REQUIRE(server.listen_unix(path));
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  // One connection on each, both mid-request (so neither could make room for the other).
  auto paths = run_client(loop, [&] {
    Client over_unix(connect_unix(path));
    Client over_tcp(connect_tcp(server.tcp_port()));
    over_unix.send("GET /unix HTTP/1.1\r\n");
    over_tcp.send("GET /tcp HTTP/1.1\r\n");
    over_unix.send("Host: t\r\n\r\n");
    over_tcp.send("Host: t\r\n\r\n");
    return std::vector<std::string>{body_path(over_unix.read()), body_path(over_tcp.read())};
  });

  CHECK(paths == std::vector<std::string>{"/unix", "/tcp"});
  server.close();
  ::rmdir(dir_template);
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: tells the handler which listener a request came through") {
  TestLoop loop;
  char dir_template[] = "/tmp/corral-http-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  std::string path = std::string(dir_template) + "/api.sock";
  std::vector<Request> seen;
  Server server(loop.get(), [&](Request&& req, Responder respond) {
    seen.push_back(req);
    echo(std::move(req), respond);
  });
  REQUIRE(server.listen_unix(path));
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  int tcp_client_port = run_client(loop, [&] {
    Client over_unix(connect_unix(path));
    over_unix.send(get("/via-unix"));
    over_unix.read();
    Client over_tcp(connect_tcp(server.tcp_port()));
    over_tcp.send(get("/via-tcp"));
    over_tcp.read();
    return over_tcp.local_port();
  });

  REQUIRE(seen.size() == 2);
  CHECK(seen[0].path == "/via-unix");
  CHECK(seen[0].transport == Transport::kUnix);
  CHECK(seen[0].peer.empty());
  CHECK(seen[1].path == "/via-tcp");
  CHECK(seen[1].transport == Transport::kTcp);
  CHECK(seen[1].peer == "127.0.0.1:" + std::to_string(tcp_client_port));
  server.close();
  ::rmdir(dir_template);
  CHECK(loop.close() == 0);
}

}  // namespace corral::http
