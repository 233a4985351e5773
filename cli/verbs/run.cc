// `corral run FILE [-n N] [--var k=v]... [--detach]`: submits a scenario file as a run of N
// instances and, unless detached, follows it to the end. Exits 0 when every instance passed,
// 1 when any failed, errored or was cancelled (as a CI job expects).
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/runs_view.h"
#include "cli/verb.h"

namespace corral::cli {
namespace {

using nlohmann::json;

class RunVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("file", file_, "scenario file (JSON)")->required();
    app.add_option("-n,--instances", instances_, "instances to run at once")
        ->check(CLI::Range(1, 1000000));
    app.add_option("--var", vars_,
                   "a run-time variable, NAME=VALUE (repeatable; JSON values keep their type)");
    app.add_flag("-d,--detach", detach_, "return once submitted; do not follow the run");
  }

  int run(const Context& ctx) override {
    std::ifstream in(file_);
    if (!in) return fail("cannot read " + file_);
    std::stringstream text;
    text << in.rdbuf();
    json scenario = json::parse(text.str(), nullptr, false);
    if (scenario.is_discarded()) return fail(file_ + ": not valid JSON");
    json vars = json::object();
    for (const auto& v : vars_) {
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return fail("--var " + v + ": expected NAME=VALUE");
      // A value that reads as JSON (3, true, {"a":1}) keeps its type; anything else is text.
      json value = json::parse(v.substr(eq + 1), nullptr, false);
      vars[v.substr(0, eq)] = value.is_discarded() ? json(v.substr(eq + 1)) : value;
    }
    const Api api(ctx);
    auto answer =
        api.post("/runs", {{"scenario", scenario}, {"instances", instances_}, {"vars", vars}});
    if (!answer) return report_failure(answer.status(), api.socket_path());
    std::string id = json_string(*answer, "run");
    std::cout << "corral: run " << id << ": " << instances_ << " instances of "
              << json_string(scenario, "name") << "\n";
    if (detach_) return 0;
    return follow(api, id);
  }

 private:
  static int follow(const Api& api, const std::string& id) {
    const bool tty = ::isatty(STDOUT_FILENO) != 0;
    std::string last;
    for (;;) {
      auto run = api.get("/runs/" + id);
      if (!run) return report_failure(run.status(), api.socket_path());
      std::string line = render_progress(*run);
      if (line != last) {
        std::cout << (tty ? "\r\033[K" : "") << line << (tty ? "" : "\n") << std::flush;
        last = line;
      }
      std::string state = json_string(*run, "state");
      if (state == "finished" || state == "cancelled") {
        if (tty) std::cout << "\n";
        std::cout << render_run(*run);
        json counts = json_field(*run, "counts");
        return json_number(counts, "passed") == json_number(*run, "instances") ? 0 : 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }

  std::string file_;
  long instances_ = 1;
  std::vector<std::string> vars_;
  bool detach_ = false;
};

CORRAL_REGISTER_VERB(RunVerb, "run", "run a scenario file with N instances")

}  // namespace
}  // namespace corral::cli
