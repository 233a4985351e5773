// The HTTP server on a real libuv loop, talked to over real sockets by blocking clients on their
// own threads (see http_test_client.h).
#include <http_parser.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "shared/http/server.h"
#include "shared/uv/timer.h"
#include "tests/unit/shared/http_test_client.h"

namespace corral::http {

using namespace testing;

TEST_CASE("http server: answers a GET with query parameters") {
  TestLoop loop;
  std::optional<Request> seen;
  Server server(loop.get(), [&](Request&& req, Responder respond) {
    seen = req;
    Response r = Response::json(200, {{"name", req.query_param("name").value_or("?")}});
    r.headers = {{"X-Request-Id", "7"}, {"content-length", "999"}, {"X-Bad", "a\r\nInjected: 1"}};
    respond.send(std::move(r));
  });
  REQUIRE(server.listen_tcp("127.0.0.1", 0));
  int port = server.tcp_port();
  REQUIRE(port > 0);

  auto reply = run_client(loop, [&] {
    Client c(connect_tcp(port));
    c.send(get("/hello/world?name=J%C3%B6rg+Smith&flag&empty=&n=1&n=2", "X-Trace: abc\r\n"));
    return c.read();
  });

  REQUIRE(reply);
  CHECK(reply->status == 200);
  CHECK(reply->header("Content-Type") == "application/json");
  CHECK(reply->header("Content-Length") == std::to_string(reply->body.size()));
  CHECK(reply->header("X-Request-Id") == "7");
  CHECK(reply->header("Injected").empty());
  CHECK(reply->json()["name"] == "Jörg Smith");
  REQUIRE(seen);
  CHECK(seen->method == "GET");
  CHECK(seen->path == "/hello/world");
  CHECK(seen->query == "name=J%C3%B6rg+Smith&flag&empty=&n=1&n=2");
  CHECK(seen->query_param("flag") == std::optional<std::string>(""));
  CHECK(seen->query_param("empty") == std::optional<std::string>(""));
  CHECK(seen->query_param("n") == std::optional<std::string>("1"));
  CHECK_FALSE(seen->query_param("missing").has_value());
  CHECK(seen->header("x-TRACE") == "abc");
  CHECK(seen->header("absent").empty());
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: passes a POST body to the handler, plain or chunked") {
  TestLoop loop;
  Server server(loop.get(), echo);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  auto replies = run_client(loop, [&] {
    Client c(connect_tcp(server.tcp_port()));
    std::vector<std::optional<Reply>> out;
    c.send(post("/runs", R"({"scenario":"smoke"})"));
    out.push_back(c.read());
    c.send(
        "POST /chunked HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    out.push_back(c.read());
    return out;
  });

  REQUIRE(replies[0]);
  CHECK(replies[0]->json()["method"] == "POST");
  CHECK(replies[0]->json()["path"] == "/runs");
  CHECK(replies[0]->json()["body"] == R"({"scenario":"smoke"})");
  REQUIRE(replies[1]);
  CHECK(replies[1]->json()["body"] == "hello world");
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: keeps connections alive as HTTP/1.1 and HTTP/1.0 ask") {
  TestLoop loop;
  std::vector<size_t> open_connections;
  Server server(loop.get(), [&](Request&& req, Responder respond) {
    open_connections.push_back(server.connection_count());
    echo(std::move(req), respond);
  });
  REQUIRE(server.listen_tcp("127.0.0.1", 0));
  int port = server.tcp_port();

  struct Seen {
    std::optional<Reply> a, b, c, d, e;
    bool closed_after_close = false, closed_after_http10 = false;
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    {
      Client c(connect_tcp(port));
      c.send(get("/a"));
      out.a = c.read();
      c.send(get("/b"));
      out.b = c.read();
      c.send(get("/c", "Connection: close\r\n"));
      out.c = c.read();
      out.closed_after_close = c.closed_by_server();
    }
    Client c(connect_tcp(port));
    c.send("GET /d HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    out.d = c.read();
    c.send("GET /e HTTP/1.0\r\n\r\n");
    out.e = c.read();
    out.closed_after_http10 = c.closed_by_server();
    return out;
  });

  CHECK(body_path(s.a) == "/a");
  CHECK(body_path(s.b) == "/b");
  CHECK(s.b->header("Connection").empty());  // HTTP/1.1 keeps alive by default
  CHECK(body_path(s.c) == "/c");
  CHECK(s.c->header("Connection") == "close");
  CHECK(s.closed_after_close);
  CHECK(body_path(s.d) == "/d");
  CHECK(s.d->header("Connection") == "keep-alive");
  CHECK(body_path(s.e) == "/e");
  CHECK(s.e->header("Connection") == "close");
  CHECK(s.closed_after_http10);
  CHECK(open_connections == std::vector<size_t>{1, 1, 1, 1, 1});  // one connection each time
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: answers pipelined requests in order") {
  TestLoop loop;
  std::vector<std::string> events;
  uv::Timer timer(loop.get());
  Server server(loop.get(), [&](Request&& req, Responder respond) {
    events.push_back("call " + req.path);
    if (req.path != "/slow") return echo(std::move(req), respond);
    timer.start(50, 0, [&events, respond] {  // the first request answers last of all
      events.push_back("answer /slow");
      respond.send(Response::json(200, {{"path", "/slow"}}));
    });
  });
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  auto replies = run_client(loop, [&] {
    Client c(connect_tcp(server.tcp_port()));
    c.send(get("/slow") + get("/fast1") + post("/fast2", "{}"));
    std::vector<std::string> paths;
    for (int i = 0; i < 3; ++i) paths.push_back(body_path(c.read()));
    return paths;
  });

  CHECK(replies == std::vector<std::string>{"/slow", "/fast1", "/fast2"});
  CHECK(events ==
        std::vector<std::string>{"call /slow", "answer /slow", "call /fast1", "call /fast2"});
  timer.close();
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: lets a handler answer later, once, through its Responder") {
  TestLoop loop;
  uv::Timer timer(loop.get());
  std::optional<Responder> first;
  bool timer_fired = false;
  Server server(loop.get(), [&](Request&& req, Responder respond) {
    if (req.path == "/later") {
      timer.start(30, 0, [&, respond] {
        timer_fired = true;
        respond.send(Response::json(202, {{"path", "/later"}}));
        respond.send(Response::json(500, {{"path", "twice"}}));  // ignored: answered already
      });
    } else if (req.path == "/one") {
      first = respond;
      respond.send(Response::json(200, {{"path", "/one"}}));
    } else {
      first->send(Response::json(500, {{"path", "stale"}}));  // answers /one again: ignored
      respond.send(Response::json(200, {{"path", req.path}}));
    }
  });
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  auto replies = run_client(loop, [&] {
    Client c(connect_tcp(server.tcp_port()));
    std::vector<std::optional<Reply>> out;
    c.send(get("/later"));
    out.push_back(c.read());
    c.send(get("/one") + get("/two"));
    out.push_back(c.read());
    out.push_back(c.read());
    return out;
  });

  CHECK(timer_fired);
  REQUIRE(replies[0]);
  CHECK(replies[0]->status == 202);
  CHECK(body_path(replies[0]) == "/later");
  CHECK(body_path(replies[1]) == "/one");
  CHECK(body_path(replies[2]) == "/two");
  timer.close();
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: answers a malformed request with 400 and closes the connection") {
  TestLoop loop;
  int calls = 0;
  Server server(loop.get(), [&](Request&& req, Responder respond) {
    ++calls;
    echo(std::move(req), respond);
  });
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  struct Seen {
    std::optional<Reply> ok, bad;
    bool closed = false;
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    Client c(connect_tcp(server.tcp_port()));
    c.send(get("/ok") + "THIS IS NOT HTTP\r\n\r\n");
    out.ok = c.read();
    out.bad = c.read();
    out.closed = c.closed_by_server();
    return out;
  });

  CHECK(body_path(s.ok) == "/ok");
  REQUIRE(s.bad);
  CHECK(s.bad->status == 400);
  CHECK(s.bad->header("Connection") == "close");
  CHECK(s.bad->json()["error"] ==
        std::string("malformed HTTP request: ") + http_errno_description(HPE_INVALID_METHOD));
  CHECK(s.closed);
  CHECK(calls == 1);
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: refuses a body over the limit with 413 and headers with 431") {
  TestLoop loop;
  ServerOptions opts;
  opts.max_body_bytes = 1024;
  opts.max_header_bytes = 1024;
  int calls = 0;
  Server server(
      loop.get(),
      [&](Request&&, Responder respond) {
        ++calls;
        respond.send(Response::json(200, {}));
      },
      opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));
  int port = server.tcp_port();

  std::string request;
  int expected = 0;
  SECTION("a Content-Length over the limit") {
    request = post("/big", std::string(4096, 'x'));
    expected = 413;
  }
  SECTION("a chunked body that grows over the limit") {
    std::string chunk = "258\r\n" + std::string(600, 'x') + "\r\n";  // 0x258 = 600
    request = "POST /big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk +
              chunk + chunk + "0\r\n\r\n";
    expected = 413;
  }
  SECTION("headers over the limit") {
    request = get("/", "X-Big: " + std::string(2000, 'h') + "\r\n");
    expected = 431;
  }

  struct Seen {
    std::optional<Reply> reply;
    bool closed = false;
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    Client c(connect_tcp(port));
    c.send(request);
    out.reply = c.read();
    out.closed = c.closed_by_server();
    return out;
  });

  REQUIRE(s.reply);
  CHECK(s.reply->status == expected);
  CHECK(s.reply->json()["error"].get<std::string>().find("1024") != std::string::npos);
  CHECK(s.closed);
  CHECK(calls == 0);
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: answers 500 when the handler throws, and keeps the connection") {
  TestLoop loop;
  Server server(loop.get(), [&](Request&& req, Responder respond) {
    if (req.path == "/boom") throw std::runtime_error("boom");
    if (req.path == "/int") throw 42;
    echo(std::move(req), respond);
  });
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  auto replies = run_client(loop, [&] {
    Client c(connect_tcp(server.tcp_port()));
    c.send(get("/boom") + get("/int") + get("/fine"));
    std::vector<std::optional<Reply>> out;
    for (int i = 0; i < 3; ++i) out.push_back(c.read());
    return out;
  });

  for (int i : {0, 1}) {
    REQUIRE(replies[i]);
    CHECK(replies[i]->status == 500);
    CHECK(replies[i]->json()["error"] == "internal server error");
  }
  CHECK(body_path(replies[2]) == "/fine");
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: listens on a unix socket with mode 0600 next to TCP") {
  TestLoop loop;
  char dir_template[] = "/tmp/corral-http-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  std::string dir = dir_template;
  std::string path = dir + "/api.sock";
  {  // a socket file left behind by a process that died
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    ::close(fd);
  }
  Server server(loop.get(), echo);
  REQUIRE(server.listen_unix(path, 0600));
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 07777) == 0600);
  Server rival(loop.get(), echo);
  CHECK(rival.listen_unix(path).code() == Code::kAlreadyExists);

  auto replies = run_client(loop, [&] {
    Client over_unix(connect_unix(path));
    Client over_tcp(connect_tcp(server.tcp_port()));
    over_unix.send(get("/via-unix"));
    over_tcp.send(get("/via-tcp"));
    return std::vector<std::string>{body_path(over_unix.read()), body_path(over_tcp.read())};
  });

  CHECK(replies == std::vector<std::string>{"/via-unix", "/via-tcp"});
  server.close();
  rival.close();
  CHECK(::stat(path.c_str(), &st) != 0);  // close() removed the socket file
  ::rmdir(dir.c_str());
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: listens on IPv4 and IPv6 literals and reports bad addresses") {
  TestLoop loop;
  Server server(loop.get(), echo);
  CHECK(server.listen_tcp("localhost", 0).code() == Code::kInvalidArgument);
  CHECK(server.listen_tcp("127.0.0.1", 70000).code() == Code::kInvalidArgument);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));
  int port = server.tcp_port();
  Server rival(loop.get(), echo);
  Status taken = rival.listen_tcp("127.0.0.1", port);
  CHECK(taken.code() == Code::kIo);
  CHECK(taken.message().find("127.0.0.1:" + std::to_string(port)) != std::string::npos);

  Status v6 = server.listen_tcp("[::1]", 0);
  if (!v6) {
    WARN("no IPv6 loopback here: " << v6.message());
  } else {
    server.close();  // listen again, IPv6 only, so that tcp_port() is the IPv6 one
    REQUIRE(server.listen_tcp("::1", 0));
    std::string path = run_client(loop, [&] {
      Client c(connect_tcp(server.tcp_port(), "::1"));
      c.send(get("/v6"));
      return body_path(c.read());
    });
    CHECK(path == "/v6");
  }
  server.close();
  rival.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: sends 100 Continue to a client that expects it") {
  TestLoop loop;
  Server server(loop.get(), echo);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  auto replies = run_client(loop, [&] {
    Client c(connect_tcp(server.tcp_port()));
    c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    std::vector<std::optional<Reply>> out;
    out.push_back(c.read());  // the body is not sent until this arrives
    c.send("hello");
    out.push_back(c.read());
    return out;
  });

  REQUIRE(replies[0]);
  CHECK(replies[0]->status == 100);
  REQUIRE(replies[1]);
  CHECK(replies[1]->json()["body"] == "hello");
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: accepts and closes connections over the limit at once when none is idle") {
  TestLoop loop;
  ServerOptions opts;
  opts.max_connections = 2;
  std::vector<size_t> open_connections;
  Server server(
      loop.get(),
      [&](Request&& req, Responder respond) {
        open_connections.push_back(server.connection_count());
        echo(std::move(req), respond);
      },
      opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));
  int port = server.tcp_port();

  struct Seen {
    std::string first, second, again;
    bool third_closed = false;
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    // Each sends the start of a second request with its first, so that once answered, it is
    // mid-request (in one read: the server parses the rest right after answering).
    Client c1(connect_tcp(port));
    c1.send(get("/1") + "GET /again HTTP/1.1\r\n");
    out.first = body_path(c1.read());
    Client c2(connect_tcp(port));
    c2.send(get("/2") + "GET /2b HTTP/1.1\r\n");
    out.second = body_path(c2.read());
    Client c3(connect_tcp(port));
    out.third_closed = c3.closed_by_server();
    c1.send("Host: test\r\n\r\n");  // the two within the limit are still served
    out.again = body_path(c1.read());
    return out;
  });

  CHECK(s.first == "/1");
  CHECK(s.second == "/2");
  CHECK(s.third_closed);
  CHECK(s.again == "/again");
  CHECK(open_connections == std::vector<size_t>{1, 2, 2});
  // The clients have gone: once the server sees it, new connections are welcome again.
  REQUIRE(loop.run_until([&] { return server.connection_count() == 0; }));
  std::string later = run_client(loop, [&] {
    Client c(connect_tcp(port));
    c.send(get("/later"));
    return body_path(c.read());
  });
  CHECK(later == "/later");
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: closes idle keep-alive connections, but not one awaiting its handler") {
  TestLoop loop;
  ServerOptions opts;
  opts.idle_timeout_ms = 100;
  uv::Timer timer(loop.get());
  Server server(
      loop.get(),
      [&](Request&& req, Responder respond) {
        if (req.path != "/slow") return echo(std::move(req), respond);
        timer.start(300, 0, [respond] { respond.send(Response::json(200, {{"path", "/slow"}})); });
      },
      opts);
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  struct Seen {
    std::string slow, fast;
    bool closed = false;
    std::chrono::milliseconds idle_for{0};
  };
  Seen s = run_client(loop, [&] {
    Seen out;
    Client c(connect_tcp(server.tcp_port()));
    c.send(get("/slow"));  // takes 3 idle timeouts to answer
    out.slow = body_path(c.read());
    c.send(get("/fast"));
    out.fast = body_path(c.read());
    auto start = Clock::now();
    out.closed = c.closed_by_server();
    out.idle_for = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    return out;
  });

  CHECK(s.slow == "/slow");
  CHECK(s.fast == "/fast");
  CHECK(s.closed);
  CHECK(s.idle_for >= 80ms);  // uv_now() has millisecond resolution and caches
  CHECK(s.idle_for < 2000ms);
  CHECK(server.connection_count() == 0);
  timer.close();
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: stops reading from a client that does not read its answers") {
  TestLoop loop;
  constexpr int kRequests = 40;
  int calls = 0;
  Server server(loop.get(), [&](Request&&, Responder respond) {
    Response r;
    r.content_type = "text/plain";
    r.body.assign(1 << 20, static_cast<char>('a' + calls++ % 26));
    respond.send(std::move(r));
  });
  REQUIRE(server.listen_tcp("127.0.0.1", 0));

  Gate read_now;
  std::string firsts;  // the first byte of each body, in arrival order
  bool sizes_ok = true;
  ClientThread client([&] {
    Client c(connect_tcp(server.tcp_port()));
    std::string all;
    for (int i = 0; i < kRequests; ++i) all += get("/big");
    c.send(all);
    if (!read_now.wait()) return;
    for (int i = 0; i < kRequests; ++i) {
      auto r = c.read();
      if (!r) return;
      sizes_ok = sizes_ok && r->body.size() == (1u << 20);
      firsts += r->body.empty() ? '?' : r->body[0];
    }
  });

  // With nobody reading, the server answers until its write queue is full, then waits.
  CHECK_FALSE(loop.run_until([&] { return calls == kRequests; }, 500ms));
  CHECK(calls < kRequests);
  CHECK(calls > 0);
  read_now.open = true;
  CHECK(loop.run_until([&] { return client.done(); }, 20s));
  client.join();
  CHECK(calls == kRequests);
  CHECK(sizes_ok);
  std::string expected;
  for (int i = 0; i < kRequests; ++i) expected += static_cast<char>('a' + i % 26);
  CHECK(firsts == expected);
  server.close();
  CHECK(loop.close() == 0);
}

TEST_CASE("http server: leaves no handle open after close(), whatever its connections do") {
  TestLoop loop;
  char dir_template[] = "/tmp/corral-http-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  std::string path = std::string(dir_template) + "/api.sock";
  std::optional<Responder> held;
  Server server(loop.get(), [&](Request&& req, Responder respond) {
    if (req.path == "/hold") {
      held = respond;
    } else {
      echo(std::move(req), respond);
    }
  });
  REQUIRE(server.listen_tcp("127.0.0.1", 0));
  REQUIRE(server.listen_unix(path));

  Gate closed;
  std::atomic<bool> idle_ready{false};
  bool held_closed = false, idle_closed = false;
  ClientThread client([&] {
    Client idle(connect_tcp(server.tcp_port()));
    Client holding(connect_unix(path));
    Client half(connect_tcp(server.tcp_port()));
    idle.send(get("/idle"));
    idle_ready = idle.read().has_value();
    holding.send(get("/hold") + get("/queued"));
    half.send("GET /half HTTP/1.1\r\nHost:");
    if (!closed.wait()) return;
    held_closed = holding.closed_by_server();
    idle_closed = idle.closed_by_server();
  });

  REQUIRE(loop.run_until([&] { return idle_ready && held && server.connection_count() == 3; }));
  server.close();
  CHECK(server.connection_count() == 0);
  held->send(Response::json(200, {}));  // the connection has gone: nothing happens
  server.close();                       // safe twice
  closed.open = true;
  CHECK(loop.run_until([&] { return client.done(); }));
  client.join();
  CHECK(held_closed);
  CHECK(idle_closed);
  ::rmdir(dir_template);
  CHECK(loop.close() == 0);
}

}  // namespace corral::http
