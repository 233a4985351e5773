// `corral run FILE [-n N] [--var k=v]... [--priority P] [--detach | --junit FILE]`: submits a
// scenario file as a run of N instances and, unless detached, follows it to the end with a
// progress line, then prints the summary (and writes a JUnit report). Exits as a CI job expects: 0
// when every instance passed, 1 when any failed, errored or was cancelled, 2 for a scenario the
// daemon rejects or a bad command line.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/junit.h"
#include "cli/runs_view.h"
#include "cli/scenario_file.h"
#include "cli/verb.h"
#include "shared/api/runs.h"
#include "shared/exit_codes.h"
#include "shared/http/blocking_client.h"

namespace corral::cli {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kPollEvery{500};
constexpr milliseconds kPipeLineGap{1000};     // progress lines when stdout is not a TTY
constexpr long kSubmitTimeoutMs = 30000;       // a large submission is still one quick answer
constexpr long kDataSubmitTimeoutMs = 600000;  // the daemon scans a --data file first
constexpr long kInstancesTimeoutMs = 120000;   // every instance with its steps, for --junit

class RunVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("file", file_, "scenario file (JSON)")->required();
    auto* n = app.add_option("-n,--instances", instances_, "instances to run at once")
                  ->check(CLI::Range(1, 1000000));
    auto* data = app.add_option("--data", data_,
                                "a CSV or JSON Lines file: one instance per row, read as "
                                "{{row.COLUMN}} (the daemon reads it: a path on its host)")
                     ->type_name("FILE")
                     ->excludes(n);
    app.add_option("--key", key_, "the --data column that names each instance")
        ->type_name("COLUMN")
        ->needs(data);
    app.add_option("--var", vars_,
                   "a run-time variable, NAME=VALUE (repeatable; JSON values keep their type)");
    app.add_option("--priority", priority_,
                   "its share of the workers beside other runs waiting for room, 1 to 100")
        ->check(CLI::Range(1, 100));
    auto* detach = app.add_flag("-d,--detach", detach_, "return once submitted; do not follow");
    app.add_option("--junit", junit_, "when the run ends, write a JUnit XML report to this file")
        ->type_name("FILE")
        ->excludes(detach);
  }

  int run(const Context& ctx) override {
    auto scenario = read_scenario_file(file_);
    if (!scenario) return usage_error(scenario.status().message());
    auto vars = vars_from_flags(vars_);
    if (!vars) return usage_error(vars.status().message());
    if (!junit_.empty()) {
      // Refuse before submitting rather than lose the report after a long run.
      const auto dir = std::filesystem::absolute(junit_).parent_path();
      std::error_code ec;
      if (!std::filesystem::is_directory(dir, ec)) {
        return usage_error("--junit " + junit_ + ": no directory " + dir.string());
      }
    }
    const Clock::time_point started = Clock::now();
    const Api api(ctx);
    std::string id;
    if (int code = submit(api, *scenario, *vars, id); code != 0) return code;
    std::cout << "corral: run " << id << ": " << counted(instances_, "instance", "instances")
              << " of " << json_string(*scenario, "name");
    if (!data_.empty()) std::cout << ", one per row of " << data_;
    std::cout << "\n" << std::flush;
    if (detach_) return 0;
    return follow(ctx, api, id, started);
  }

 private:
  // POST /runs. A 400 is the daemon rejecting the scenario (the message names the field): a
  // usage error, unlike a full queue (429) or a daemon that is not there.
  int submit(const Api& api, const json& scenario, const json& vars, std::string& id) {
    json body = {
        {"scenario", scenario}, {"instances", instances_}, {"vars", vars}, {"priority", priority_}};
    if (!data_.empty()) {
      body.erase("instances");  // one per row
      body["data"] = {{"path", std::filesystem::absolute(data_).lexically_normal().string()}};
      if (!key_.empty()) body["data"]["key"] = key_;
    }
    // The daemon reads a data file through before it answers.
    auto answer = api.send("POST", "/runs", body.dump(),
                           data_.empty() ? kSubmitTimeoutMs : kDataSubmitTimeoutMs);
    if (!answer) return report_failure(answer.status(), api.socket_path());
    const json reply = answer->json();
    if (answer->status == 201) {
      auto submitted = api::submit_answer_from_json(reply);
      if (!submitted)
        return fail("the daemon's answer to POST /runs: " + submitted.status().message());
      id = submitted->run;
      if (submitted->data) report_skipped(*submitted->data);
      instances_ = static_cast<long>(submitted->instances);
      return 0;
    }
    std::string message = json_string(reply, "error");
    if (message.empty()) message = "POST /runs failed with HTTP " + std::to_string(answer->status);
    if (answer->status == 400) return usage_error(file_ + ": " + message);
    return fail(message);
  }

  // The rows of the --data file that did not parse, on stderr: they do not run.
  void report_skipped(const api::DataRows& data) const {
    if (data.skipped == 0) return;
    std::cerr << "corral: " << data_ << ": "
              << counted(static_cast<long>(data.skipped), "row", "rows") << " skipped:\n";
    constexpr size_t kShown = 10;
    for (size_t k = 0; k < std::min(kShown, data.bad.size()); ++k) {
      std::cerr << "  line " << data.bad[k].line << ": " << data.bad[k].error << "\n";
    }
    const uint64_t shown = std::min<uint64_t>(kShown, data.bad.size());
    if (shown < data.skipped) {
      std::cerr << "  (and " << data.skipped - shown
                << " more: GET /runs/<id> has the first 100)\n";
    }
  }

  int follow(const Context& ctx, const Api& api, const std::string& id,
             Clock::time_point started) const {
    const bool tty = ::isatty(STDOUT_FILENO) != 0;
    ProgressGate gate(kPipeLineGap);
    for (;;) {
      auto run = get_answer(api, "/runs/" + id, &api::run_detail_from_json);
      if (!run) return report_failure(run.status(), api.socket_path());
      const bool ended = run->state == "finished" || run->state == "cancelled";
      const Clock::time_point now = Clock::now();
      const std::string line =
          render_progress(*run, std::chrono::duration<double>(now - started).count());
      if (tty) {
        std::cout << "\r\033[K" << line << (ended ? "\n" : "") << std::flush;
      } else if (gate.due(*run, now, ended)) {
        std::cout << line << "\n" << std::flush;
      }
      if (ended) {
        std::cout << render_run(*run);
        int code = run->counts.passed == run->instances ? 0 : 1;
        if (!junit_.empty() && write_junit(ctx, *run) != 0) code = 1;
        return code;
      }
      std::this_thread::sleep_for(kPollEvery);
    }
  }

  // Fetches every instance with its steps in one call and writes the report.
  int write_junit(const Context& ctx, const api::RunDetail& run) const {
    const Api slow(ctx, kInstancesTimeoutMs);
    const std::string path =
        "/runs/" + run.id + "/instances?limit=" + std::to_string(run.instances) + "&steps=true";
    auto instances = get_answer(slow, path, &api::instances_from_json);
    if (!instances) return report_failure(instances.status(), slow.socket_path());
    std::ofstream out(junit_, std::ios::trunc);
    out << render_junit(run, instances->instances);
    out.close();
    if (!out) return fail("--junit " + junit_ + ": cannot write the report");
    std::cout << "junit      : " << junit_ << "\n";
    return 0;
  }

  std::string file_;
  long instances_ = 1;
  std::string data_, key_;
  long priority_ = 1;
  std::vector<std::string> vars_;
  bool detach_ = false;
  std::string junit_;
};

CORRAL_REGISTER_VERB(RunVerb, "run", "run a scenario file with N instances")

}  // namespace
}  // namespace corral::cli
