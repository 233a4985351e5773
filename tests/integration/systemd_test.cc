// corral under systemd, without systemd: the daemon's sd_notify messages read from a datagram
// socket the test owns (as $NOTIFY_SOCKET), and the unit `corral startup` writes, checked by
// systemd-analyze.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "tests/support/harness.h"

using namespace corral::test;

namespace {

// A unix datagram socket bound at `path`: what systemd listens on for sd_notify.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  }
  ~NotifySocket() { ::close(fd_); }

  // Every message received so far, in order.
  const std::vector<std::string>& messages() {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd_, buf, sizeof(buf), 0)) > 0) received_.emplace_back(buf, size_t(n));
    return received_;
  }
  // Index of the first message after `from` that contains `text`, or -1.
  int find(const std::string& text, int from = -1) {
    const auto& all = messages();
    for (int i = from + 1; i < static_cast<int>(all.size()); ++i) {
      if (all[size_t(i)].find(text) != std::string::npos) return i;
    }
    return -1;
  }
  int count(const std::string& exact) {
    int n = 0;
    for (const auto& m : messages()) n += m == exact ? 1 : 0;
    return n;
  }
  std::string dump() {
    std::string out;
    for (const auto& m : messages()) out += "[" + m + "] ";
    return out;
  }

 private:
  int fd_ = -1;
  std::vector<std::string> received_;
};

}  // namespace

TEST_CASE("systemd: READY=1 once the workers are ready, RELOADING=1 and READY=1 around a "
          "SIGHUP reload, WATCHDOG=1 from the loop, STOPPING=1 on SIGTERM") {
  TempHome home;
  NotifySocket notify(home.file("notify.sock"));
  Daemon d(home, DaemonOptions()
                     .with_workers(2)
                     .with_config({{"reload_grace", "200ms"}})
                     .with_env("NOTIFY_SOCKET", home.file("notify.sock"))
                     .with_env("WATCHDOG_USEC", "400000"));
  int ready = -1;
  wait_for([&] { return (ready = notify.find("READY=1")) >= 0; }, seconds(10), "READY=1",
           [&] { return notify.dump(); });
  INFO(notify.dump());
  CHECK_THAT(notify.messages()[size_t(ready)], Catch::Contains("STATUS=2/2 workers ready"));
  CHECK(d.health().at("workers_ready") == 2);
  wait_for([&] { return notify.count("WATCHDOG=1") >= 3; }, seconds(5), "WATCHDOG=1 thrice",
           [&] { return notify.dump(); });

  d.signal(SIGHUP);
  int reloading = -1, ready_again = -1;
  wait_for(
      [&] {
        reloading = notify.find("RELOADING=1", ready);
        ready_again = reloading < 0 ? -1 : notify.find("READY=1", reloading);
        return ready_again >= 0;
      },
      seconds(15), "RELOADING=1, then READY=1", [&] { return notify.dump(); });
  CHECK_THAT(notify.messages()[size_t(reloading)], Catch::Contains("MONOTONIC_USEC="));
  CHECK(d.api("GET", "/workers/reload").json["reload"]["state"] == "done");

  d.signal(SIGTERM);
  wait_for([&] { return notify.find("STOPPING=1", ready_again) >= 0; }, seconds(10), "STOPPING=1",
           [&] { return notify.dump(); });
  CHECK(d.wait_exit(seconds(15)) == 0);
  CHECK(notify.find("READY=1", notify.find("STOPPING=1")) == -1);
}

TEST_CASE("startup: prints a Type=notify unit that systemd-analyze accepts, and --install writes "
          "it") {
  TempHome home;
  const std::string config = home.write_config({{"workers", 2}});
  CliResult printed = run_cli({"startup", "--config", config, "--user", "corral"}, home.path());
  INFO(printed.describe());
  REQUIRE(printed.exit_code == 0);
  for (const std::string line :
       {"Type=notify", "NotifyAccess=main", "ExecReload=/bin/kill -HUP $MAINPID",
        "Restart=on-failure", "WatchdogSec=30s", "KillMode=mixed", "LimitNOFILE=",
        "User=corral", "WantedBy=multi-user.target"}) {
    CHECK_THAT(printed.out, Catch::Contains(line));
  }
  CHECK_THAT(printed.out, Catch::Contains("ExecStart=" + corral_binary() + " daemon --home " +
                                          home.path() + " --config " + config + "\n"));

  CliResult installed =
      run_cli({"startup", "--install", "--unit-dir", home.path(), "--config", config}, home.path());
  INFO(installed.describe());
  REQUIRE(installed.exit_code == 0);
  const std::string unit = home.file("corral.service");
  CHECK_THAT(read_file(unit), Catch::Contains("Type=notify"));
  // The unit's syntax, keys and ExecStart= binary, as systemd itself checks them.
  CliResult verify = run_program("/usr/bin/systemd-analyze", {"verify", unit}, home.path());
  INFO(verify.describe());
  CHECK(verify.exit_code == 0);
  CHECK(verify.err.empty());
  CHECK(verify.out.empty());
}
