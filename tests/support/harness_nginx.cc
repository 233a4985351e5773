#include "tests/support/harness_nginx.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/test_pki.h"

namespace bp = boost::process;

namespace corral::test {
namespace {

constexpr const char* kNginx = "/usr/sbin/nginx";

// A port the kernel has just handed out: free unless something takes it before nginx binds.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

std::string config(const std::string& dir, int https, int http, const Nginx::Options& o) {
  const TestPki& pki = test_pki();
  return "worker_processes 1;\nmaster_process off;\ndaemon off;\npid " + dir +
         "/nginx.pid;\nerror_log " + dir + "/error.log warn;\nworker_rlimit_nofile " +
         std::to_string(o.worker_connections + 100) + ";\nevents { worker_connections " +
         std::to_string(o.worker_connections) + "; }\nhttp {\n  access_log off;\n" +
         "  client_body_temp_path " + dir + "/tmp;\n  proxy_temp_path " + dir + "/tmp;\n" +
         "  fastcgi_temp_path " + dir + "/tmp;\n  uwsgi_temp_path " + dir + "/tmp;\n" +
         "  scgi_temp_path " + dir +
         "/tmp;\n  server {\n    listen 127.0.0.1:" + std::to_string(https) +
         " ssl http2;\n    listen 127.0.0.1:" + std::to_string(http) + ";\n    ssl_certificate " +
         pki.ec.cert + ";\n    ssl_certificate_key " + pki.ec.key +
         ";\n    ssl_protocols TLSv1.2 TLSv1.3;\n" + o.server_extra +
         "\n    location = /nginx_status { stub_status; }\n"
         "    location / { default_type application/json; return 200 '{\"status\":\"N\"}'; }\n"
         "  }\n}\n";
}

}  // namespace

struct Nginx::Child {
  bp::child process;
};

Nginx::Nginx() : Nginx(Options()) {}

Nginx::Nginx(Options options) : child_(std::make_unique<Child>()) {
  REQUIRE(::access(kNginx, X_OK) == 0);  // tools/install-deps installs nginx-light
  char tmpl[] = "/tmp/corral-nginx-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  dir_ = tmpl;
  std::filesystem::create_directories(dir_ + "/tmp");
  std::filesystem::create_directories(dir_ + "/logs");
  for (int attempt = 0; attempt < 5; ++attempt) {
    https_port_ = free_port();
    http_port_ = free_port();
    std::ofstream(dir_ + "/nginx.conf") << config(dir_, https_port_, http_port_, options);
    child_->process =
        bp::child(kNginx, "-p", dir_ + "/", "-c", dir_ + "/nginx.conf", "-e", dir_ + "/error.log",
                  bp::std_out > bp::null, bp::std_err > dir_ + "/nginx.out");
    bool up = false;
    auto deadline = Clock::now() + seconds(10);
    while (!up && child_->process.running() && Clock::now() < deadline) {
      auto r =
          try_tcp_request("127.0.0.1", http_port_, "GET", "/nginx_status", "", milliseconds(500));
      up = r && r->status == 200;
      own_ += up ? 1 : 0;
      if (!up) std::this_thread::sleep_for(milliseconds(20));
    }
    if (up) return;
    if (child_->process.running()) ::kill(child_->process.id(), SIGKILL);
    child_->process.wait();  // a port taken meanwhile: try two others
  }
  FAIL("nginx did not start: " + read_file(dir_ + "/error.log") + read_file(dir_ + "/nginx.out"));
}

Nginx::~Nginx() {
  if (child_->process.running()) ::kill(child_->process.id(), SIGKILL);
  if (child_->process.valid()) child_->process.wait();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

int Nginx::pid() const { return child_->process.id(); }

uint64_t Nginx::requests() {
  auto r = try_tcp_request("127.0.0.1", http_port_, "GET", "/nginx_status");
  REQUIRE(r);
  ++own_;
  // "Active connections: 1 \nserver accepts handled requests\n 5 5 9 \n..."
  std::istringstream in(r->body);
  std::string line;
  std::getline(in, line);
  std::getline(in, line);
  uint64_t accepts = 0, handled = 0, served = 0;
  in >> accepts >> handled >> served;
  return served >= own_ ? served - own_ : 0;
}

}  // namespace corral::test
