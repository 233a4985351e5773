// shared/http/blocking_client: what a caller sees when the server is missing, silent or answers.
// (It lives in shared/, but the CLI is its first user, so its tests sit with the CLI's.)
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/support/temp_dir.h"

#include "shared/http/blocking_client.h"

namespace corral::http {
namespace {

using corral::test::TempDir;

// A listening unix socket that accepts nothing by itself (connections wait in the backlog).
class UnixListener {
 public:
  explicit UnixListener(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 4) == 0);
  }
  ~UnixListener() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// Accepts one connection, reads the request until its body is complete, answers `response`,
// and returns what it received.
std::string serve_once(int listen_fd, const std::string& response) {
  const int fd = ::accept(listen_fd, nullptr, nullptr);
  if (fd < 0) return "";
  std::string got;
  char buf[4096];
  while (true) {
    const size_t head_end = got.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      const size_t cl = got.find("Content-Length: ");
      const size_t body_len = cl == std::string::npos ? 0 : std::stoul(got.substr(cl + 16));
      if (got.size() >= head_end + 4 + body_len) break;
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  (void)!::write(fd, response.data(), response.size());
  ::close(fd);
  return got;
}

TEST_CASE("cli blocking client: a socket path that does not exist is kUnavailable") {
  TempDir dir;
  auto result = request(Target::over_unix(dir.path() + "/nothing.sock"), "GET", "/health");
  REQUIRE_FALSE(result.is_ok());
  CHECK(result.status().code() == Code::kUnavailable);
}

TEST_CASE("cli blocking client: a closed TCP port is kUnavailable") {
  // Bind an ephemeral port, then close it: nothing listens there any more.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  auto result = request(Target::over_tcp("127.0.0.1", ntohs(addr.sin_port)), "GET", "/health");
  REQUIRE_FALSE(result.is_ok());
  CHECK(result.status().code() == Code::kUnavailable);
}

TEST_CASE("cli blocking client: a server that never answers is kTimeout after timeout_ms") {
  TempDir dir;
  UnixListener listener(dir.path() + "/silent.sock");
  const auto start = std::chrono::steady_clock::now();
  auto result = request(Target::over_unix(dir.path() + "/silent.sock"), "GET", "/health", "", 300);
  const auto waited = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(result.is_ok());
  CHECK(result.status().code() == Code::kTimeout);
  CHECK(waited >= std::chrono::milliseconds(250));
  CHECK(waited < std::chrono::seconds(5));
}

TEST_CASE("cli blocking client: sends the method, path and JSON body, returns status and body") {
  TempDir dir;
  UnixListener listener(dir.path() + "/api.sock");
  std::string received;
  std::thread server([&] {
    received = serve_once(listener.fd(),
                          "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                          "Content-Length: 26\r\nConnection: close\r\n\r\n"
                          "{\"error\":\"no worker slot\"}");
  });
  auto result = request(Target::over_unix(dir.path() + "/api.sock"), "POST", "/workers/restart",
                        R"({"slot":9})", 5000);
  server.join();
  REQUIRE(result.is_ok());
  CHECK(result->status == 404);
  CHECK(result->json() == nlohmann::json{{"error", "no worker slot"}});
  CHECK(received.rfind("POST /workers/restart HTTP/1.1\r\n", 0) == 0);
  CHECK(received.find("Content-Type: application/json\r\n") != std::string::npos);
  CHECK(received.substr(received.size() - 10) == R"({"slot":9})");
}

TEST_CASE("cli blocking client: a DELETE without a body sends no body") {
  TempDir dir;
  UnixListener listener(dir.path() + "/api.sock");
  std::string received;
  std::thread server([&] {
    received = serve_once(listener.fd(), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
  });
  auto result = request(Target::over_unix(dir.path() + "/api.sock"), "DELETE", "/runs/7");
  server.join();
  REQUIRE(result.is_ok());
  CHECK(result->status == 200);
  CHECK(received.rfind("DELETE /runs/7 HTTP/1.1\r\n", 0) == 0);
  CHECK(received.find("Content-Length") == std::string::npos);
}

TEST_CASE("cli blocking client: a body that is not JSON reads as null") {
  HttpResult r{200, "not json"};
  CHECK(r.json().is_null());
  CHECK(HttpResult{200, ""}.json().is_null());
  CHECK(HttpResult{200, "[1]"}.json() == nlohmann::json::array({1}));
}

}  // namespace
}  // namespace corral::http
