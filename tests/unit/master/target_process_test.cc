// A load test's target process: ready checks, its lines, how it ends, and its process group.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "master/target_process.h"
#include "shared/proc.h"
#include "tests/support/test_loop.h"

using corral::load::TargetCommand;
using corral::master::TargetProcess;

namespace {

struct Started {
  corral::test::TestLoop loop;
  std::unique_ptr<TargetProcess> process;
  std::optional<corral::Status> ready;
  std::optional<TargetProcess::Exit> exit;

  explicit Started(TargetCommand cmd) {
    auto p = TargetProcess::start(
        &loop.loop, std::move(cmd), [this](corral::Status s) { ready = std::move(s); },
        [this](TargetProcess::Exit e) { exit = e; }, CORRAL_BINARY);
    REQUIRE(p.is_ok());
    process = std::move(*p);
  }
  ~Started() { process.reset(); }

  bool wait_ready() {
    return loop.run_until([&] { return ready.has_value(); });
  }
  bool wait_exit() {
    return loop.run_until([&] { return exit.has_value(); });
  }
  std::vector<std::string> texts() const {
    std::vector<std::string> out;
    for (const auto& l : process->lines()) out.push_back((l.err ? "2|" : "1|") + l.text);
    return out;
  }
};

TargetCommand sh(const std::string& script) {
  TargetCommand c;
  c.cmd = {"sh", "-c", script};
  return c;
}

// Whether `pid` is gone (or a zombie nobody has reaped yet).
bool gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  size_t paren = line.rfind(')');
  return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z';
}

}  // namespace

TEST_CASE("target process: ready once a line matches, its lines are kept, and stop() ends it") {
  TargetCommand c = sh("echo starting; echo 'listening on 8080' >&2; exec sleep 30");
  c.ready = TargetCommand::Ready::kLog;
  c.log = "listening on [0-9]+";
  Started t(c);
  REQUIRE(t.wait_ready());
  CHECK(t.ready->is_ok());
  CHECK(t.texts() == std::vector<std::string>{"1|starting", "2|listening on 8080"});
  CHECK(t.process->running());
  t.process->stop();
  REQUIRE(t.wait_exit());
  CHECK(t.exit->stopped);
  CHECK(t.exit->signal == SIGTERM);
  CHECK(t.process->rss_peak() > 0);
}

TEST_CASE("target process: one that ends before it is ready says how, with its lines") {
  TargetCommand c = sh("echo 'cannot find module server.js' >&2; exit 3");
  c.ready = TargetCommand::Ready::kLog;
  c.log = "listening";
  Started t(c);
  REQUIRE(t.wait_ready());
  REQUIRE_FALSE(t.ready->is_ok());
  CHECK(t.ready->message() == "exited with code 3 before it was ready");
  CHECK(t.texts() == std::vector<std::string>{"2|cannot find module server.js"});
  // A target that was never ready has no exit to tell.
  t.loop.run_until([] { return false; }, 100);
  CHECK_FALSE(t.exit);
}

TEST_CASE("target process: a program that does not exist is said so by target-exec") {
  TargetCommand c;
  c.cmd = {"/nonexistent/server"};
  c.ready = TargetCommand::Ready::kPort;
  c.port = 1;
  Started t(c);
  REQUIRE(t.wait_ready());
  CHECK(t.ready->message() == "exited with code 127 before it was ready");
  REQUIRE(t.texts().size() == 1);
  CHECK_THAT(t.texts()[0], Catch::Contains("cannot run the target \"/nonexistent/server\": No such "
                                           "file or directory"));
}

TEST_CASE("target process: not ready in time is an error, and the process is stopped") {
  TargetCommand c = sh("exec sleep 30");
  c.ready = TargetCommand::Ready::kUrl;
  c.url = "http://127.0.0.1:1/health";  // nothing listens on port 1
  c.ready_timeout_ms = 300;
  Started t(c);
  const pid_t pid = t.process->pid();
  REQUIRE(t.wait_ready());
  CHECK(t.ready->message() == "was not ready after 300ms");
  CHECK(t.loop.run_until([&] { return !t.process->running(); }));
  CHECK(gone(pid));
}

TEST_CASE("target process: ready once its port accepts a connection") {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  TargetCommand c = sh("exec sleep 30");
  c.ready = TargetCommand::Ready::kPort;
  c.port = ntohs(addr.sin_port);
  c.ready_timeout_ms = 5000;
  Started t(c);
  t.loop.run_until([] { return false; }, 400);  // nothing listens yet: not ready
  CHECK_FALSE(t.ready);
  REQUIRE(::listen(fd, 4) == 0);
  REQUIRE(t.wait_ready());
  CHECK(t.ready->is_ok());
  ::close(fd);
}

TEST_CASE(
    "target process: the group is stopped, SIGKILL after the grace for what ignores SIGTERM") {
  // A child in the background that ignores SIGTERM, as the shell does.
  TargetCommand c = sh("trap '' TERM; sleep 30 & echo $!; echo up; wait");
  c.ready = TargetCommand::Ready::kLog;
  c.log = "^up$";
  c.stop_grace_ms = 200;
  Started t(c);
  REQUIRE(t.wait_ready());
  REQUIRE(t.ready->is_ok());
  const pid_t child = static_cast<pid_t>(std::stol(t.process->lines().front().text));
  CHECK_FALSE(gone(child));
  t.process->stop();
  REQUIRE(t.wait_exit());
  CHECK(t.exit->stopped);
  CHECK(t.exit->signal == SIGKILL);
  CHECK(t.loop.run_until([&] { return gone(child); }));
}

TEST_CASE("target process: its death is told with the lines it wrote last, and why it died") {
  TargetCommand c =
      sh("echo ready; sleep 0.2; "
         "echo 'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory' "
         ">&2;"
         " printf 'no newline at the end' >&2; kill -ABRT $$");
  c.ready = TargetCommand::Ready::kLog;
  c.log = "ready";
  Started t(c);
  REQUIRE(t.wait_ready());
  REQUIRE(t.wait_exit());
  CHECK_FALSE(t.exit->stopped);
  CHECK(t.exit->signal == SIGABRT);
  CHECK(t.process->cause() ==
        "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory");
  REQUIRE(t.texts().size() == 3);
  CHECK(t.texts()[2] == "2|no newline at the end");
}

TEST_CASE("target process: the last 100 lines are kept, each cut at 2,000 bytes") {
  TargetCommand c =
      sh("i=1; while [ $i -le 150 ]; do echo line $i; i=$((i+1)); done; "
         "head -c 5000 /dev/zero | tr '\\0' x; echo; exit 0");
  Started t(c);
  REQUIRE(t.wait_exit());
  CHECK(t.exit->exit_code == 0);
  const auto& lines = t.process->lines();
  REQUIRE(lines.size() == TargetProcess::kMaxLines);
  CHECK(lines.front().text == "line 52");
  CHECK(lines[98].text == "line 150");
  CHECK(lines.back().text == std::string(TargetProcess::kMaxLineBytes, 'x'));
}

TEST_CASE("target process: its environment is the daemon's, without secrets, and its own") {
  ::setenv("CORRAL_SECRET_TOKEN", "hush", 1);
  ::setenv("CORRAL_TEST_INHERITED", "yes", 1);
  TargetCommand c = sh("echo \"$CORRAL_SECRET_TOKEN|$CORRAL_TEST_INHERITED|$PORT|$(pwd)\"");
  c.env = {{"PORT", "8080"}, {"CORRAL_TEST_INHERITED", "overridden"}};
  c.cwd = "/tmp";
  Started t(c);
  REQUIRE(t.wait_exit());
  ::unsetenv("CORRAL_SECRET_TOKEN");
  ::unsetenv("CORRAL_TEST_INHERITED");
  CHECK(t.texts() == std::vector<std::string>{"1||overridden|8080|/tmp"});
}
