// `corral logs [SLOT|master] [--lines N] [--follow]`: the last lines of the daemon's and the
// workers' log files, read straight from $CORRAL_HOME/logs (no daemon needed), like `pm2 logs`.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/log_tail.h"
#include "cli/verb.h"
#include "shared/exit_codes.h"
#include "shared/log_files.h"

namespace corral::cli {
namespace {

class LogsVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("which", which_, "a worker slot, or 'master' (default: every log)");
    app.add_option("--lines", lines_, "lines to show from each file")->capture_default_str();
    app.add_flag("-f,--follow", follow_, "keep printing new lines until interrupted");
  }

  int run(const Context& ctx) override {
    const std::string dir = ctx.logs_dir();
    std::vector<LogFile> files;
    if (which_.empty()) {
      files = current_log_files(dir);
      if (files.empty() && !follow_) return fail("no log files in " + dir);
    } else if (which_ == "master") {
      files.push_back({dir + "/master.log", "master"});
    } else if (which_.find_first_not_of("0123456789") == std::string::npos) {
      files.push_back({dir + "/worker-" + which_ + ".log", "worker-" + which_});
    } else {
      std::cerr << "corral: logs: expected a worker slot or 'master', got '" << which_ << "'\n";
      return kExitUsage;
    }
    // Following, every line says which file it is from, the tail's as the new ones.
    size_t width = 0;
    for (const LogFile& f : files) width = std::max(width, f.label.size());
    for (const LogFile& f : files) {
      const std::string prefix =
          follow_ ? f.label + std::string(width - f.label.size(), ' ') + " | " : "";
      auto lines = tail_lines(f.path, lines_);
      if (!lines) {
        if (lines.status().code() == Code::kNotFound && follow_) continue;  // may appear later
        return fail(lines.status().message());
      }
      std::cout << f.path << " last " << lines_ << " lines:\n";
      for (const std::string& l : *lines) std::cout << prefix << l << "\n";
      std::cout << "\n";
    }
    if (follow_) follow(dir, files);
    return 0;
  }

 private:
  // Never returns: the user interrupts it.
  void follow(const std::string& dir, const std::vector<LogFile>& files) {
    LogFollower follower;
    for (const LogFile& f : files) follower.add(f);
    std::cout.flush();
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (which_.empty()) {
        // A file that appears now (a new slot after a scale) is shown from its first line.
        for (const LogFile& f : current_log_files(dir)) follower.add(f, /*from_start=*/true);
      }
      follower.poll(std::cout);
    }
  }

  std::string which_;
  size_t lines_ = 20;
  bool follow_ = false;
};

CORRAL_REGISTER_VERB(LogsVerb, "logs", "show (or follow) the daemon's and workers' logs")

}  // namespace
}  // namespace corral::cli
