// corral-target [--listen HOST:PORT] [--processes K] [--die-above-connections N]
// [--delay-extra-ms N]: serves the test
// API in target.h until SIGINT/SIGTERM. Prints "listening on HOST:PORT" once it accepts connections
// (port 0 picks a free port).
//
// --processes K runs K processes on the same port (SO_REUSEPORT; the kernel spreads
// connections among them), so that the target can hold more connections than one process's
// file-descriptor limit allows, and use more cores. The first process only holds the port and
// supervises: it forwards SIGINT/SIGTERM and exits when they have. Each process keeps its own
// jobs and counts (/stats), so K > 1 is for load tests, not for the job routes' state.
//
// --die-above-connections N aborts the process (SIGABRT) once more than N connections are open,
// saying "out of memory" on stderr first: a server with a known breaking point.
//
// --delay-extra-ms N makes /delay answer N ms later than asked: a slower server, for
// comparisons of load tests against a baseline (bench/compare).
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "config/config.h"
#include "tools/target/target.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: corral-target [--listen HOST:PORT] [--processes K] "
               "[--die-above-connections N] [--delay-extra-ms N]\n");
  return 2;
}

// --die-above-connections N: a server with a breaking point, for the breaking-point search's
// tests. Checked every 20 ms; past it, says so as a server out of memory would, and aborts.
int die_above = 0;
int delay_extra_ms = 0;

void watch_connections(uv_loop_t* loop, corral::target::Target& target) {
  static uv_timer_t timer;
  uv_timer_init(loop, &timer);
  timer.data = &target;
  uv_timer_start(
      &timer,
      [](uv_timer_t* t) {
        const size_t open = static_cast<corral::target::Target*>(t->data)->connection_count();
        if (open <= static_cast<size_t>(die_above)) return;
        std::fprintf(stderr,
                     "corral-target: out of memory with %llu connections open "
                     "(--die-above-connections %d)\n",
                     static_cast<unsigned long long>(open), die_above);
        std::abort();
      },
      20, 20);
  uv_unref(reinterpret_cast<uv_handle_t*>(&timer));
}

// Serves on `host:port` until SIGINT/SIGTERM. `ready` (if >= 0) gets one byte once listening.
int serve(const std::string& host, int port, bool reuse_port, int ready) {
  uv_loop_t* loop = uv_default_loop();
  corral::target::Target target(loop);
  if (auto s = target.listen(host, port, reuse_port); !s) {
    std::fprintf(stderr, "corral-target: cannot listen on %s:%d: %s\n", host.c_str(), port,
                 s.message().c_str());
    return 1;
  }
  if (ready >= 0) {
    (void)!::write(ready, "1", 1);
    ::close(ready);
  } else {
    std::printf("listening on %s:%d\n", host.c_str(), target.port());
    std::fflush(stdout);
  }
  if (die_above > 0) watch_connections(loop, target);
  target.set_delay_extra_ms(static_cast<uint64_t>(delay_extra_ms));
  uv_signal_t sigs[2];
  int signums[2] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; ++i) {
    uv_signal_init(loop, &sigs[i]);
    sigs[i].data = &target;
    uv_signal_start(
        &sigs[i],
        [](uv_signal_t* h, int) {
          static_cast<corral::target::Target*>(h->data)->close();
          uv_stop(h->loop);
        },
        signums[i]);
  }
  uv_run(loop, UV_RUN_DEFAULT);
  return 0;
}

// Holds the port with a bound, non-listening SO_REUSEPORT socket (port 0 picks one), starts
// `k` serving processes on it, and waits for a signal or for them to end.
int supervise(const std::string& host, int port, int k) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  sockaddr_storage addr{};
  if (uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(&addr)) != 0) {
    std::fprintf(stderr, "corral-target: --processes needs an IPv4 address, got %s\n", host.c_str());
    return 2;
  }
  int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  socklen_t len = sizeof addr;
  if (holder < 0 || ::setsockopt(holder, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
      ::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(sockaddr_in)) != 0 ||
      ::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stderr, "corral-target: cannot bind %s:%d: %s\n", host.c_str(), port,
                 std::strerror(errno));
    return 1;
  }
  port = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return 1;
  std::vector<pid_t> children;
  const pid_t parent = ::getpid();
  for (int i = 0; i < k; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a supervisor killed outright leaves no server behind
      if (::getppid() != parent) std::_Exit(1);
      sigprocmask(SIG_UNBLOCK, &set, nullptr);
      ::close(pipefd[0]);
      ::close(holder);
      std::_Exit(serve(host, port, true, pipefd[1]));
    }
    if (pid > 0) children.push_back(pid);
  }
  ::close(pipefd[1]);
  char byte;
  size_t ready = 0;
  while (ready < children.size() && ::read(pipefd[0], &byte, 1) == 1) ++ready;
  ::close(pipefd[0]);
  if (ready < static_cast<size_t>(k)) {
    for (pid_t pid : children) ::kill(pid, SIGTERM);
    while (::wait(nullptr) > 0) {}
    return 1;
  }
  std::printf("listening on %s:%d (%d processes)\n", host.c_str(), port, k);
  std::fflush(stdout);
  size_t alive = children.size();
  int code = 0;
  while (alive > 0) {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGCHLD) {
      int status = 0;
      while (::waitpid(-1, &status, WNOHANG) > 0) {
        --alive;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) code = 1;
      }
      continue;
    }
    for (pid_t pid : children) ::kill(pid, SIGTERM);
  }
  ::close(holder);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:8081";
  int processes = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
      listen = argv[++i];
    } else if (std::strcmp(argv[i], "--die-above-connections") == 0 && i + 1 < argc) {
      die_above = std::atoi(argv[++i]);
      if (die_above < 1) return usage();
    } else if (std::strcmp(argv[i], "--delay-extra-ms") == 0 && i + 1 < argc) {
      delay_extra_ms = std::atoi(argv[++i]);
      if (delay_extra_ms < 0 || delay_extra_ms > 60000) return usage();
    } else if (std::strcmp(argv[i], "--processes") == 0 && i + 1 < argc) {
      processes = std::atoi(argv[++i]);
      if (processes < 1 || processes > 256) return usage();
    } else {
      return usage();
    }
  }
  auto hp = corral::config::parse_host_port(listen);
  if (!hp) {
    std::fprintf(stderr, "corral-target: --listen: %s\n", hp.status().message().c_str());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  if (processes == 1) return serve(hp->first, hp->second, false, -1);
  return supervise(hp->first, hp->second, processes);
}
