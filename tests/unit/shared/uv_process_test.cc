// uv::Process: a child started with posix_spawn, its fds as asked, its exit seen on a pidfd.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "shared/uv/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_loop.h"

using corral::uv::Process;
using Fd = corral::uv::Process::Fd;

namespace {

struct Exit {
  int64_t status = -1;
  int signal = -1;
};

// Runs `argv` with its fd 1 (and `extra` fds after it) read into `out`; returns how it ended.
struct Run {
  explicit Run(corral::test::TestLoop& t) : loop(t) {}

  void start(const Process::Spec& spec) {
    auto p = Process::spawn(&loop.loop, spec, [this](int64_t status, int signal) {
      exit = Exit{status, signal};
      process.reset();
    });
    REQUIRE(p.is_ok());
    process = std::move(*p);
  }
  void read(corral::uv::Stream& s) {
    REQUIRE(s.start_read([this](std::string_view b) { out.append(b); }, [this](int) { ++ended; }));
  }
  bool wait(int streams = 1) {
    return loop.run_until([&] { return exit.has_value() && ended >= streams; });
  }

  corral::test::TestLoop& loop;
  std::unique_ptr<Process> process;
  std::optional<Exit> exit;
  std::string out;
  int ended = 0;
};

std::string status_line(const std::string& status, const std::string& key) {
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

}  // namespace

TEST_CASE("uv process: the exit code and the signal that ended a child are reported") {
  corral::test::TestLoop t;
  Run exits(t);
  exits.start({{"/bin/sh", "-c", "exit 7"}, "", {}, "", {}, false});
  REQUIRE(t.run_until([&] { return exits.exit.has_value(); }));
  CHECK(exits.exit->status == 7);
  CHECK(exits.exit->signal == 0);

  Run killed(t);
  killed.start({{"sleep", "30"}, "", {}, "", {}, false});  // found in PATH
  REQUIRE(killed.process->pid() > 0);
  CHECK(killed.process->kill(SIGTERM) == 0);
  REQUIRE(t.run_until([&] { return killed.exit.has_value(); }));
  CHECK(killed.exit->status == 0);
  CHECK(killed.exit->signal == SIGTERM);
}

TEST_CASE("uv process: a program that cannot be started is refused with the reason") {
  corral::test::TestLoop t;
  Process::Spec spec{{"/nonexistent/corral-prog"}, "", {}, "", {}, false};
  auto p = Process::spawn(&t.loop, spec, [](int64_t, int) { FAIL("no exit expected"); });
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().message() == "no such file or directory");
}

TEST_CASE("uv process: the child's fds are the ones asked for, even where the sources cross") {
  corral::test::TestLoop t;
  corral::test::TempDir dir;
  // Two files, given to the child swapped: its fd numbered as the parent's `a` is file b, and
  // the other way round, so that each source is a number the child's fds take.
  int a = ::open((dir.path() + "/a").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  int b = ::open((dir.path() + "/b").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(a >= 3);
  REQUIRE(b >= 3);
  std::vector<Fd> fds(static_cast<size_t>(std::max(a, b) + 1), Fd::null());
  auto out = corral::uv::Stream::pipe(&t.loop);
  fds[1] = Fd::pipe_to(*out);
  fds[2] = Fd::inherit();
  fds[static_cast<size_t>(a)] = Fd::of(b);
  fds[static_cast<size_t>(b)] = Fd::of(a);
  const std::string script = "echo to-b >&" + std::to_string(a) + "; echo to-a >&" +
                             std::to_string(b) + "; echo out; cat; echo eof";
  Run r(t);
  r.start({{"/bin/bash", "-c", script}, "", {}, "", fds, false});  // bash: >&N past 9
  ::close(a);
  ::close(b);
  r.read(*out);
  REQUIRE(r.wait());
  CHECK(r.exit->status == 0);
  CHECK(r.out == "out\neof\n");  // stdin was /dev/null: cat read its end at once
  auto slurp = [&](const char* name) {
    std::ifstream in(dir.path() + "/" + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  CHECK(slurp("a") == "to-a\n");
  CHECK(slurp("b") == "to-b\n");
}

TEST_CASE("uv process: the child has default signal actions and no blocked signals") {
  corral::test::TestLoop t;
  // The parent ignores SIGPIPE (as the master does) and blocks SIGUSR1.
  auto old_pipe = std::signal(SIGPIPE, SIG_IGN);
  sigset_t usr1, old_mask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, &old_mask);
  auto out = corral::uv::Stream::pipe(&t.loop);
  Run r(t);
  r.start({{"cat", "/proc/self/status"}, "", {}, "", {Fd::null(), Fd::pipe_to(*out)}, false});
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  std::signal(SIGPIPE, old_pipe);
  r.read(*out);
  REQUIRE(r.wait());
  // Signals 1 to 31 (32 and 33 are glibc's own: its posix_spawn leaves them ignored, and a
  // program linked with glibc sets them up again).
  const std::string ignored = status_line(r.out, "SigIgn");
  REQUIRE_FALSE(ignored.empty());
  CHECK((std::stoull(ignored, nullptr, 16) & 0x7fffffffull) == 0);
  CHECK(status_line(r.out, "SigBlk") == "\t0000000000000000");
}

TEST_CASE("uv process: environment, working directory and a session of its own") {
  corral::test::TestLoop t;
  corral::test::TempDir dir;
  auto out = corral::uv::Stream::pipe(&t.loop);
  Run r(t);
  // Fields 1 and 6 of /proc/self/stat: the pid and the session id.
  r.start({{"/bin/sh", "-c", "echo $CORRAL_X; pwd; cut -d' ' -f1,6 /proc/$$/stat"},
           "",
           std::vector<std::string>{"CORRAL_X=seen", "PATH=/usr/bin:/bin"},
           dir.path(),
           {Fd::null(), Fd::pipe_to(*out)},
           true});
  r.read(*out);
  REQUIRE(r.wait());
  std::istringstream lines(r.out);
  std::string x, cwd, ids;
  std::getline(lines, x);
  std::getline(lines, cwd);
  std::getline(lines, ids);
  CHECK(x == "seen");
  CHECK(cwd == dir.path());
  const auto space = ids.find(' ');
  REQUIRE(space != std::string::npos);
  CHECK(ids.substr(0, space) == ids.substr(space + 1));  // pid == sid: setsid() ran
}

TEST_CASE("uv process: destroying the Process neither kills the child nor waits for it") {
  corral::test::TestLoop t;
  corral::test::TempDir dir;
  const std::string mark = dir.path() + "/mark";
  pid_t pid = 0;
  {
    auto p = Process::spawn(
        &t.loop, {{"/bin/sh", "-c", "sleep 0.2; echo done > " + mark}, "", {}, "", {}, false},
        [](int64_t, int) { FAIL("no exit is reported after destruction"); });
    REQUIRE(p.is_ok());
    pid = (*p)->pid();
  }
  REQUIRE(t.run_until([&] { return std::ifstream(mark).good(); }));
  CHECK(pid > 0);
}

TEST_CASE("uv process: a program without a '/' is looked for in the PATH of the env given") {
  corral::test::TestLoop t;
  corral::test::TempDir dir;
  const std::string program = dir.path() + "/corral-path-probe";
  std::ofstream(program) << "#!/bin/sh\necho found\n";
  REQUIRE(::chmod(program.c_str(), 0755) == 0);
  auto out = corral::uv::Stream::pipe(&t.loop);
  Run r(t);
  r.start({{"corral-path-probe"},
           "",
           std::vector<std::string>{"PATH=/nonexistent:" + dir.path()},
           "",
           {Fd::null(), Fd::pipe_to(*out)},
           false});
  r.read(*out);
  REQUIRE(r.wait());
  CHECK(r.exit->status == 0);
  CHECK(r.out == "found\n");
}
