// Helpers for tests of the HTTP server on a real libuv loop, talked to over real sockets by
// blocking clients on their own threads. Catch2 assertions are not thread-safe, so client
// threads only return what they saw and the test thread checks it.
#pragma once

#include <arpa/inet.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "shared/http/server.h"

namespace corral::http::testing {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A loop owned by one test.
class TestLoop {
 public:
  TestLoop() { uv_loop_init(&loop_); }
  ~TestLoop() {
    if (closed_) return;
    uv_walk(
        &loop_,
        [](uv_handle_t* h, void*) {
          if (!uv_is_closing(h)) uv_close(h, nullptr);
        },
        nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }
  uv_loop_t* get() { return &loop_; }

  // Runs the loop until `done` holds or `timeout` passes; returns `done()`.
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
    uv_timer_t tick;  // wakes uv_run now and then, so that `done` is checked
    uv_timer_init(&loop_, &tick);
    uv_timer_start(
        &tick, [](uv_timer_t*) {}, 1, 1);
    auto deadline = Clock::now() + timeout;
    bool ok = false;
    while (!(ok = done()) && Clock::now() < deadline) uv_run(&loop_, UV_RUN_ONCE);
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop_, UV_RUN_NOWAIT);
    return ok;
  }

  // Runs the loop once more (close callbacks) and closes it: 0 when no handle is left open.
  int close() {
    uv_run(&loop_, UV_RUN_NOWAIT);
    int rc = uv_loop_close(&loop_);
    closed_ = rc == 0;
    return rc;
  }

 private:
  uv_loop_t loop_;
  bool closed_ = false;
};

// A thread for the client side of a test; done() tells the loop when to stop.
class ClientThread {
 public:
  explicit ClientThread(std::function<void()> body)
      : thread_([this, body = std::move(body)] {
          body();
          done_ = true;
        }) {}
  ~ClientThread() { join(); }
  bool done() const { return done_; }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Runs `client` on a thread while the loop runs, and returns what it returned.
template <typename F>
auto run_client(TestLoop& loop, F client) {
  std::optional<decltype(client())> result;
  ClientThread thread([&] { result.emplace(client()); });
  bool finished = loop.run_until([&] { return thread.done(); });
  thread.join();
  REQUIRE(finished);
  return std::move(*result);
}

// Lets a client thread wait for the test thread.
struct Gate {
  std::atomic<bool> open{false};
  bool wait() const {
    auto deadline = Clock::now() + 10s;
    while (!open && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
    return open;
  }
};

struct Reply {
  int status = 0;
  HeaderList headers;
  std::string body;
  std::string header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
      if (iequals(key, name)) return value;
    }
    return "";
  }
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

inline int with_timeouts(int fd) {
  timeval tv{5, 0};  // no client blocks for long when the server misbehaves
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return fd;
}

inline int connect_tcp(int port, const char* host = "127.0.0.1") {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (std::strchr(host, ':') != nullptr) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, host, &a->sin6_addr);
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host, &a->sin_addr);
    len = sizeof(*a);
  }
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    ::close(fd);
    return -1;
  }
  return with_timeouts(fd);
}

inline int connect_unix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return with_timeouts(fd);
}

// A blocking client connection that reads replies with http-parser.
class Client {
 public:
  explicit Client(int fd) : fd_(fd) {
    http_parser_init(&parser_, HTTP_RESPONSE);
    parser_.data = this;
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // The next reply, or nullopt when the connection ends, times out or sends garbage first.
  std::optional<Reply> read() {
    char buf[64 * 1024];
    while (replies_.empty()) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return std::nullopt;
      size_t parsed = http_parser_execute(&parser_, &kSettings, buf, static_cast<size_t>(n));
      if (parsed != static_cast<size_t>(n) || HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
        return std::nullopt;
      }
    }
    Reply r = std::move(replies_.front());
    replies_.pop_front();
    return r;
  }

  // Whether the server ends the connection, with nothing more sent, before the timeout.
  bool closed_by_server() {
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

  // Whether the server has sent something (or closed) within `wait`.
  bool readable(std::chrono::milliseconds wait) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(wait.count())) > 0;
  }

  // The local port of a TCP connection.
  int local_port() const {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
    return ntohs(reinterpret_cast<const sockaddr_in&>(ss).sin_port);  // same offset in IPv6
  }

 private:
  static Client& of(http_parser* p) { return *static_cast<Client*>(p->data); }
  static const http_parser_settings kSettings;

  int fd_;
  http_parser parser_;
  Reply current_;
  bool in_value_ = false;
  std::deque<Reply> replies_;
};

inline const http_parser_settings Client::kSettings = [] {
  http_parser_settings s;
  http_parser_settings_init(&s);
  s.on_header_field = [](http_parser* p, const char* at, size_t len) {
    Client& c = of(p);
    if (c.in_value_ || c.current_.headers.empty()) c.current_.headers.emplace_back();
    c.in_value_ = false;
    c.current_.headers.back().first.append(at, len);
    return 0;
  };
  s.on_header_value = [](http_parser* p, const char* at, size_t len) {
    of(p).in_value_ = true;
    of(p).current_.headers.back().second.append(at, len);
    return 0;
  };
  s.on_body = [](http_parser* p, const char* at, size_t len) {
    of(p).current_.body.append(at, len);
    return 0;
  };
  s.on_message_complete = [](http_parser* p) {
    Client& c = of(p);
    c.current_.status = static_cast<int>(p->status_code);
    c.replies_.push_back(std::move(c.current_));
    c.current_ = Reply{};
    c.in_value_ = false;
    return 0;
  };
  return s;
}();

inline std::string get(const std::string& target, const std::string& extra_headers = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: test\r\n" + extra_headers + "\r\n";
}

inline std::string post(const std::string& target, const std::string& body) {
  return "POST " + target + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Answers at once with what it received.
inline void echo(Request&& req, Responder respond) {
  respond.send(Response::json(
      200, {{"method", req.method}, {"path", req.path}, {"query", req.query}, {"body", req.body}}));
}

inline std::string body_path(const std::optional<Reply>& r) {
  return r ? r->json().value("path", std::string("?")) : std::string("(none)");
}

}  // namespace corral::http::testing
