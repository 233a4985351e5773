// `corral startup`: a systemd unit for the daemon, like `pm2 startup`. Prints it, or with
// --install writes it and, where systemd runs, enables it. The unit is Type=notify: the daemon
// says READY=1 once its workers are ready, reloads on SIGHUP (`systemctl reload`) with
// RELOADING=1/READY=1 around it, and keeps systemd's watchdog fed from its loop.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/verb.h"
#include "config/config.h"
#include "shared/proc.h"

namespace corral::cli {
namespace {

class StartupVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("--config", config_, "the daemon's config file");
    app.add_option("--user", user_, "run the daemon as this user (User=)");
    app.add_option("--watchdog", watchdog_, "WatchdogSec: systemd restarts a daemon silent this long")
        ->capture_default_str();
    app.add_option("--name", name_, "the unit's name")->capture_default_str();
    app.add_option("--unit-dir", unit_dir_, "where --install writes the unit")
        ->capture_default_str();
    app.add_flag("--install", install_, "write the unit, then enable it where systemd runs");
  }

  int run(const Context& ctx) override {
    auto watchdog = config::parse_duration_ms(watchdog_);
    if (!watchdog) return fail("--watchdog: " + watchdog.status().message());
    std::error_code ec;
    std::string config = config_.empty() ? "" : std::filesystem::absolute(config_, ec).string();
    if (!config.empty() && !std::filesystem::exists(config, ec)) {
      return fail("--config: no file " + config);
    }
    const std::string home = std::filesystem::absolute(ctx.home, ec).string();
    const std::string unit = render(home, config, *watchdog);
    if (!install_) {
      std::cout << unit;
      return 0;
    }
    const std::string path = unit_dir_ + "/" + name_ + ".service";
    std::ofstream out(path);
    out << unit;
    out.close();
    if (!out) return fail("cannot write " + path);
    std::cout << "corral: wrote " << path << "\n";
    if (!std::filesystem::exists("/run/systemd/system", ec)) {
      std::cout << "corral: systemd is not running here; on the host, run:\n"
                << "  systemctl daemon-reload && systemctl enable --now " << name_ << "\n";
      return 0;
    }
    for (const std::string& cmd :
         {std::string("systemctl daemon-reload"), "systemctl enable " + name_ + ".service"}) {
      std::cout << "corral: " << cmd << "\n";
      if (std::system(cmd.c_str()) != 0) return fail(cmd + " failed");
    }
    std::cout << "corral: start it with: systemctl start " << name_ << "\n";
    return 0;
  }

 private:
  std::string render(const std::string& home, const std::string& config,
                     uint64_t watchdog_ms) const {
    std::string exec = own_executable() + " daemon --home " + home;
    if (!config.empty()) exec += " --config " + config;
    std::string unit =
        "# Written by `corral startup`: the corral daemon as a systemd service.\n"
        "[Unit]\n"
        "Description=corral: API test scenarios at scale\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=notify\n"
        "NotifyAccess=main\n"
        "Environment=CORRAL_HOME=" + home + "\n"
        "ExecStart=" + exec + "\n"
        "ExecReload=/bin/kill -HUP $MAINPID\n"
        "Restart=on-failure\n"
        "RestartSec=1s\n"
        "WatchdogSec=" + config::format_duration_ms(watchdog_ms) + "\n"
        // The master stops its workers itself (stop_grace); systemd signals only the master
        // and kills what is left at the end.
        "KillMode=mixed\n"
        "TimeoutStopSec=60s\n"
        "LimitNOFILE=524288\n";
    if (!user_.empty()) unit += "User=" + user_ + "\n";
    unit +=
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n";
    return unit;
  }

  std::string config_;
  std::string user_;
  std::string watchdog_ = "30s";
  std::string name_ = "corral";
  std::string unit_dir_ = "/etc/systemd/system";
  bool install_ = false;
};

CORRAL_REGISTER_VERB(StartupVerb, "startup",
                     "print (or --install) a systemd unit for the daemon, like pm2 startup")

}  // namespace
}  // namespace corral::cli
