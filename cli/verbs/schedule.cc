// `corral schedule add NAME --cron EXPR FILE [-n N] [--var k=v]... [--priority P] [--catch-up]`,
// `corral schedule ls [--json]`, `corral schedule rm|pause|resume NAME`: runs of a scenario file
// at the ticks of a cron expression, in UTC (docs/schedules.md). `add` reads the file and vars
// as `corral run` does; it exits 2 when the daemon refuses the schedule (a bad cron expression,
// scenario or name, or a name already taken), naming what is wrong.
#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/scenario_file.h"
#include "cli/schedules_view.h"
#include "cli/verb.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

using nlohmann::json;

class ScheduleVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.require_subcommand(1);
    add_ = app.add_subcommand("add", "submit a scenario file as a run at each tick (UTC)");
    add_->add_option("name", name_, "the schedule's name: letters, digits, '.', '_' and '-'")
        ->required();
    add_->add_option("file", file_, "scenario file (JSON)")->required();
    add_->add_option(
            "--cron", cron_,
            "when, in UTC: minute hour day-of-month month day-of-week, e.g. \"*/5 * * * *\"")
        ->required();
    add_->add_option("-n,--instances", instances_, "instances of each run")
        ->check(CLI::Range(1, 1000000));
    add_->add_option("--var", vars_,
                     "a run-time variable, NAME=VALUE (repeatable; JSON values keep their type)");
    add_->add_option("--priority", priority_, "each run's share of the workers, 1 to 100")
        ->check(CLI::Range(1, 100));
    add_->add_flag("--catch-up", catch_up_,
                   "after the daemon was down over ticks, fire once at its start");
    ls_ = app.add_subcommand("ls", "list the schedules with their next and last ticks");
    ls_->alias("list");
    ls_->add_flag("--json", json_, "print the API's JSON");
    for (auto [sub, what] : {std::pair{&rm_, "rm"}, {&pause_, "pause"}, {&resume_, "resume"}}) {
      *sub = app.add_subcommand(what, summary_of(what));
      (*sub)->add_option("name", name_, "the schedule's name")->required();
    }
    rm_->alias("remove");
    // --home after the subcommand belongs to the verb.
    for (CLI::App* sub : {add_, ls_, rm_, pause_, resume_}) sub->fallthrough();
  }

  int run(const Context& ctx) override {
    const Api api(ctx);
    if (add_->parsed()) return add(api);
    if (ls_->parsed()) return list(api);
    if (rm_->parsed()) return change(api, api.del("/schedules/" + name_), "removed");
    if (pause_->parsed()) {
      return change(api, api.post("/schedules/" + name_ + "/pause", json::object()), "paused");
    }
    return change(api, api.post("/schedules/" + name_ + "/resume", json::object()), "resumed");
  }

 private:
  static const char* summary_of(const std::string& what) {
    if (what == "rm") return "forget a schedule (its runs stay)";
    if (what == "pause") return "fire nothing until resumed";
    return "fire again from now on (the paused ticks do not come back)";
  }

  int add(const Api& api) const {
    auto scenario = read_scenario_file(file_);
    if (!scenario) return usage(scenario.status().message());
    auto vars = vars_from_flags(vars_);
    if (!vars) return usage(vars.status().message());
    const json body = {{"name", name_},           {"cron", cron_}, {"scenario", *scenario},
                       {"instances", instances_}, {"vars", *vars}, {"priority", priority_},
                       {"catch_up", catch_up_}};
    auto answer = api.post("/schedules", body);
    if (!answer) {
      if (answer.status().code() == Code::kInvalidArgument) return usage(answer.status().message());
      return report_failure(answer.status(), api.socket_path());
    }
    const json s = json_field(*answer, "schedule");
    std::cout << "corral: schedule " << name_ << ": \"" << json_string(s, "cron") << "\" (UTC), "
              << counted(instances_, "instance", "instances") << " of "
              << json_string(s, "scenario") << "; next at " << json_string(s, "next_at", "never")
              << (catch_up_ ? "; catch-up on" : "") << "\n";
    return kExitOk;
  }

  int list(const Api& api) const {
    auto answer = api.get("/schedules");
    if (!answer) return report_failure(answer.status(), api.socket_path());
    if (json_) {
      std::cout << answer->dump(2) << "\n";
      return kExitOk;
    }
    const TableStyle style = ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii;
    const nlohmann::json list = json_field(*answer, "schedules");
    if (!list.is_array() || list.empty()) {
      std::cout << "no schedules (add one with corral schedule add NAME --cron EXPR FILE)\n";
      return kExitOk;
    }
    std::cout << render_schedules_table(list, style);
    return kExitOk;
  }

  int change(const Api& api, const Result<json>& answer, const char* done) const {
    if (!answer) return report_failure(answer.status(), api.socket_path());
    std::cout << "corral: schedule " << name_ << " " << done;
    const json s = json_field(*answer, "schedule");
    if (std::string(done) == "resumed") std::cout << "; next at " << json_string(s, "next_at");
    std::cout << "\n";
    return kExitOk;
  }

  static int usage(const std::string& message) {
    std::cerr << "corral: " << message << "\n";
    return kExitUsage;
  }

  CLI::App* add_ = nullptr;
  CLI::App* ls_ = nullptr;
  CLI::App* rm_ = nullptr;
  CLI::App* pause_ = nullptr;
  CLI::App* resume_ = nullptr;
  std::string name_;
  std::string file_;
  std::string cron_;
  long instances_ = 1;
  long priority_ = 1;
  std::vector<std::string> vars_;
  bool catch_up_ = false;
  bool json_ = false;
};

CORRAL_REGISTER_VERB(ScheduleVerb, "schedule",
                     "run a scenario file at the ticks of a cron expression (add, ls, rm, pause, "
                     "resume)")

}  // namespace
}  // namespace corral::cli
