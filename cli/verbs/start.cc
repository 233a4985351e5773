// `corral start`: launches `corral daemon` detached (its own session, output appended to
// $CORRAL_HOME/logs/daemon.out) and waits until it answers, like `pm2 start`.
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>

#include "cli/api.h"
#include "cli/daemon_flags.h"
#include "cli/format.h"
#include "cli/status_view.h"
#include "cli/verb.h"
#include "cli/workers.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr size_t kLogLinesOnFailure = 20;

Status make_dir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return Status::ok();
  return io_error("mkdir(\"" + path + "\") failed: " + std::strerror(errno));
}

// Creates home (0700: it will hold the control socket) and its logs directory.
Status prepare_home(const std::string& home) {
  std::error_code ec;
  if (!fs::exists(home, ec)) {
    fs::create_directories(fs::path(home).parent_path(), ec);
    if (ec) return io_error("cannot create " + home + ": " + ec.message());
    if (Status s = make_dir(home, 0700); !s) return s;
  }
  return make_dir(home + "/logs", 0700);
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// The last lines the daemon wrote to `path` after byte `from` (this start's output only).
std::string output_since(const std::string& path, uint64_t from) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(from));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(std::move(line));
    if (lines.size() > kLogLinesOnFailure) lines.erase(lines.begin());
  }
  std::string out;
  for (const std::string& l : lines) out += "  " + l + "\n";
  return out.empty() ? "  (nothing)\n" : out;
}

class StartVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    flags_.add_to(app);
    app.add_option("--wait-timeout", wait_timeout_, "how long to wait for the daemon to answer")
        ->capture_default_str();
  }

  int run(const Context& given) override {
    auto timeout = config::parse_duration_ms(wait_timeout_);
    if (!timeout) return fail("--wait-timeout: " + timeout.status().message());
    const config::Config cfg = flags_.build(given);  // a ConfigError exits with 78
    Context ctx = given;
    ctx.home = cfg.home;
    const Api api(ctx, 1000);

    auto health = get_health(api);
    if (health) {
      return fail("already running (pid " + std::to_string(health->pid) + ", home " + ctx.home +
                  ")");
    }
    if (health.status().code() != Code::kUnavailable) {
      return fail("something holds " + api.socket_path() +
                  " but does not answer: " + health.status().message());
    }
    if (Status s = prepare_home(ctx.home); !s) return fail(s.message());
    return launch(ctx, api, cfg, std::chrono::milliseconds(*timeout));
  }

 private:
  int launch(const Context& ctx, const Api& api, const config::Config& cfg,
             std::chrono::milliseconds timeout) {
    const std::string out_path = ctx.logs_dir() + "/daemon.out";
    const uint64_t out_start = file_size(out_path);
    // "e": O_CLOEXEC, so only the dup2'ed stdout/stderr reach the daemon.
    FILE* out = std::fopen(out_path.c_str(), "ae");
    if (out == nullptr) return fail("cannot open " + out_path + ": " + std::strerror(errno));
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
      std::fclose(out);
      return fail("readlink(\"/proc/self/exe\") failed: " + ec.message());
    }
    // clang-format off
    bp::child daemon(bp::exe = self.string(), bp::args = flags_.to_args(cfg),
                     bp::std_in < bp::null, (bp::std_out & bp::std_err) > out,
                     bp::extend::on_exec_setup = [](auto&) { ::setsid(); }, ec);
    // clang-format on
    std::fclose(out);
    if (ec) return fail("cannot start " + self.string() + " daemon: " + ec.message());

    const auto deadline = Clock::now() + timeout;
    while (true) {
      auto health = get_health(api);
      if (health) {
        daemon.detach();
        return report_started(api, *health, deadline);
      }
      std::error_code running_ec;
      if (!daemon.running(running_ec)) {
        std::cerr << "corral: the daemon exited during start-up (" << exit_text(daemon)
                  << "); its output (" << out_path << "):\n"
                  << output_since(out_path, out_start);
        return 1;
      }
      if (Clock::now() >= deadline) {
        ::kill(daemon.id(), SIGTERM);
        daemon.detach();
        std::cerr << "corral: the daemon did not answer on " << api.socket_path() << " within "
                  << wait_timeout_ << "; stopped it (SIGTERM). Its output (" << out_path << "):\n"
                  << output_since(out_path, out_start);
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  static std::string exit_text(const bp::child& c) {
    const int status = c.native_exit_code();
    if (WIFSIGNALED(status)) {
      const char* name = ::sigabbrev_np(WTERMSIG(status));
      return name ? std::string("killed by SIG") + name
                  : "killed by signal " + std::to_string(WTERMSIG(status));
    }
    return "exit code " + std::to_string(WEXITSTATUS(status));
  }

  // The daemon answers; give its workers the rest of the wait to become ready, then show them.
  static int report_started(const Api& api, const api::Health& health, Clock::time_point deadline) {
    const auto wanted = static_cast<long>(health.workers_wanted);
    std::cout << "corral: daemon started (pid " << health.pid << ", " << wanted
              << (wanted == 1 ? " worker" : " workers") << ", home " << health.home << ")\n";
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto ready = wait_for_workers(
        api, [&](const Workers& list) { return count_in_state(list, "ready") >= wanted; },
        std::max(left, std::chrono::milliseconds(0)));
    if (!ready) return report_failure(ready.status(), api.socket_path());
    const int rc = print_status(api);
    // The daemon is up, which is what start promises; say so if some workers are not (yet).
    if (rc == 0 && !*ready) std::cerr << "corral: not every worker is ready yet\n";
    return rc;
  }

  DaemonFlags flags_;
  std::string wait_timeout_ = "10s";
};

CORRAL_REGISTER_VERB(StartVerb, "start", "start the daemon in the background and show its workers")

}  // namespace
}  // namespace corral::cli
