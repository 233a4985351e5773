// `corral load FILE [--vus N | --rate R | --stage D:T ...] [--duration D] [--pace D] ...`:
// runs a scenario file as a load test on the daemon's workers (POST /loads), shows a live line
// while it runs, then prints the summary and writes it with --out. The model comes from the
// file's "load" section; flags override it. Exits 0 when every threshold held, 1 when one was
// crossed or the test was stopped or aborted, 2 for a file or flags the daemon refuses, 3 when no
// daemon runs, 4 when it cannot start a test now (no worker is ready, or it is stopping).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/api.h"
#include "cli/breaking_point.h"
#include "cli/compare.h"
#include "cli/find_max.h"
#include "cli/format.h"
#include "cli/load_heir.h"
#include "cli/load_reports.h"
#include "cli/load_view.h"
#include "cli/scenario_file.h"
#include "cli/target_flags.h"
#include "cli/verb.h"
#include "config/config.h"
#include "config/load/parse.h"
#include "shared/exit_codes.h"
#include "shared/http/blocking_client.h"

// Its own namespace: the CLI is a unity build, and other verbs have helpers of these names.
namespace corral::cli::load_verb {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kPollEvery{1000};
// How long a test over hosts whose origin no longer answers is looked for on the other hosts:
// another takes it over within seconds of the origin's lease ending (docs/cluster.md).
constexpr milliseconds kTakeOverWithin{30000};
// A held-connection test may wait for extra workers to start (up to 60 s in the daemon).
constexpr long kSubmitTimeoutMs = 70000;

// How long the summary waits for a target corral started to be stopped after the test: its
// stop_grace, and the second in which the daemon notices the end.
milliseconds target_stop_wait(const json& load) {
  auto spec = load::parse_load(load);
  return milliseconds(spec ? spec->target.stop_grace_ms + 2000 : 7000);
}

// Whether the test's target, which corral started, still runs.
bool stopping_target(const api::LoadAnswer& test) {
  return test.target && test.target->process && test.target->process->state == "running";
}

// After a test with a target corral started, whether to ask again: until the target has
// ended, for its stop_grace and the second in which the daemon notices the end. The summary
// then says how it ended, and a search's next probe may take its port.
class TargetStopWait {
 public:
  bool again(const api::LoadAnswer& test) {
    if (test.state == "running" || !stopping_target(test)) return false;
    const auto now = std::chrono::steady_clock::now();
    if (!until_) until_ = now + target_stop_wait(test.load);
    return now < *until_;
  }

 private:
  std::optional<std::chrono::steady_clock::time_point> until_;
};

// --baseline's tests and the limits they are held to (none: no comparison).
struct Baseline {
  std::vector<api::LoadAnswer> tests;
  std::vector<RegressionLimit> limits;
};

// How long the target the test starts may take to be ready, before that: 0 without one.
long ready_timeout_ms(const json& load) {
  auto spec = load::parse_load(load);
  return spec && spec->target.any() ? static_cast<long>(spec->target.ready_timeout_ms) : 0;
}

// --max-p99: a duration as everywhere else ("500ms", "2s"), or a plain number of milliseconds.
Result<double> p99_bound_ms(const std::string& text) {
  char* end = nullptr;
  double ms = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size() && ms > 0) return ms;
  auto parsed = config::parse_duration_ms(text);
  if (!parsed || *parsed == 0) {
    return invalid_argument("--max-p99 " + text + ": expected a duration like 500ms or 2s");
  }
  return static_cast<double>(*parsed);
}

// --max-errors: a rate as thresholds write it, "1%", or a fraction from 0 to 1.
Result<double> error_bound(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  double v = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !(v >= 0)) v = -1;
  if (percent) v /= 100;
  if (!(v >= 0 && v <= 1)) {
    return invalid_argument("--max-errors " + text + ": expected a rate like 1% or 0.01");
  }
  return v;
}

class LoadVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_option("file", file_, "scenario file (JSON), with or without a \"load\" section")
        ->required();
    app.add_option("--vus", vus_, "closed model: this many virtual users");
    app.add_option("--rate", rate_, "open model: this many iterations per second");
    app.add_option("--connections", connections_,
                   "held model: this many VUs, each on its own keep-alive connection");
    app.add_option("--stage", stages_,
                   "a stage DURATION:TARGET, e.g. 30s:100 (repeatable; the target counts VUs, "
                   "or iterations/s with --model open)");
    app.add_option("--model", model_, "closed, open or held (with --stage)")
        ->check(CLI::IsMember({"closed", "open", "held"}));
    app.add_option("--duration", duration_, "how long the test runs, e.g. 30s");
    app.add_option("--pace", pace_, "each VU starts an iteration every PACE, e.g. 5s");
    app.add_option("--think", think_, "a pause between two steps, e.g. 500ms");
    app.add_option("--max-vus", max_vus_, "open model: VUs available for iterations");
    app.add_option("--grace", grace_, "how long running iterations may finish at the end");
    app.add_option("--hosts", hosts_,
                   "spread the test over N hosts of the daemon's cluster, or all of them");
    app.add_option("--threshold", thresholds_,
                   "METRIC: EXPRESSION, e.g. 'latency: p99 < 200ms' (repeatable)");
    app.add_option("--var", vars_, "a run-time variable, NAME=VALUE (repeatable)");
    app.add_option("--watch-pid", watch_pid_,
                   "watch this process of the target: RSS, CPU, open files, threads, its end");
    app.add_option("--watch-url", watch_url_,
                   "scrape the target's metrics (Prometheus text or JSON) every second");
    target_.add(app);
    app.add_option("--stop-when", stop_when_,
                   "stop the test when the target crosses this, e.g. 'target.rss > 1.2GB' "
                   "(repeatable)");
    auto* find = app.add_flag("--find-max", find_max_,
                              "step the load up until it breaks; report the highest sustainable");
    app.add_option("--step-duration", step_duration_, "--find-max: how long each step runs")
        ->needs(find);
    step_factor_option_ =
        app.add_option("--step-factor", step_factor_,
                       "--find-max: each step's load over the last's (default 1.5; 2 to bisect)")
            ->needs(find)
            ->check(CLI::Range(1.05, 10.0));
    app.add_option("--search", search_,
                   "--find-max: knee (step up to the highest sustainable load) or bisect (narrow "
                   "down the load at which it fails)")
        ->needs(find)
        ->check(CLI::IsMember({"knee", "bisect"}));
    app.add_option("--precision", precision_,
                   "--search bisect: stop once the breaking point is known within this, e.g. 5%")
        ->needs(find);
    app.add_option("--repeat", repeat_, "--search bisect: probes at each load, for the spread")
        ->needs(find)
        ->check(CLI::Range(1, 10));
    app.add_flag("--fresh-target", fresh_target_,
                 "--find-max: a fresh target for every probe (the load section's \"target\" "
                 "or --target-cmd)")
        ->needs(find);
    app.add_option("--max-steps", max_steps_, "--find-max: at most this many steps")
        ->needs(find)
        ->check(CLI::Range(1, 100));
    app.add_option("--max-p99", max_p99_,
                   "--find-max: a step past this p99 broke, e.g. 500ms (plain numbers: ms)")
        ->needs(find);
    app.add_option("--max-errors", max_errors_,
                   "--find-max: a step past this error rate broke, e.g. 1% or 0.01")
        ->needs(find);
    auto* html = app.add_option("--html", html_,
                                "when the test ends, write a report with charts as one HTML file")
                     ->type_name("FILE");
    auto* junit = app.add_option("--junit", junit_,
                                 "when the test ends, write its thresholds as a JUnit XML report");
    app.add_option("--out", out_, "when the test ends, write its summary and series as JSON")
        ->type_name("FILE");
    auto* baseline =
        app.add_option("--baseline", baseline_,
                       "when the test ends, compare it with this kept test (an id, or a file "
                       "--out wrote; repeats joined by commas); exit 1 when a metric regressed "
                       "past its limit")
            ->type_name("LOAD|FILE");
    app.add_option("--max-regression", max_regressions_,
                   "with --baseline: how far a metric may regress, e.g. 'p99: +10%' or "
                   "'rps: -5%' (repeatable; default: those of corral compare)")
        ->type_name("'METRIC: ±N%'")
        ->needs(baseline);
    auto* detach = app.add_flag("-d,--detach", detach_, "return once the test has started");
    detach->excludes(junit)->excludes(find)->excludes(baseline);
    baseline->excludes(find);
    junit->excludes(find);
    html->excludes(find);
    detach->excludes(html);
    junit->type_name("FILE");
  }

  int run(const Context& ctx) override {
    auto read = read_scenario_file(file_);
    if (!read) return usage_error(read.status().message());
    const json& scenario = *read;
    json load = scenario.value("load", json::object());
    if (!load.is_object()) return usage_error(file_ + ": \"load\" must be an object");
    if (std::string e = apply_flags(load); !e.empty()) return usage_error(e);
    auto vars = vars_from_flags(vars_);
    if (!vars) return usage_error(vars.status().message());
    const Api api(ctx);
    if (find_max_) return find_max(api, scenario, load, *vars);
    Baseline baseline;
    if (!baseline_.empty()) {
      auto limits = parse_regressions(max_regressions_);
      if (!limits) return usage_error(limits.status().message());
      auto tests = load_records(api, baseline_);
      if (!tests && tests.status().code() == Code::kUnavailable) {
        return report_failure(tests.status(), api.socket_path());
      }
      if (!tests) return usage_error("--baseline: " + tests.status().message());
      baseline = {std::move(*tests), std::move(*limits)};
    }
    std::string id;
    bool spread = false;
    if (int code = submit(api, scenario, load, *vars, id, spread); code != 0) return code;
    if (detach_) return 0;
    return follow(api, id, baseline, spread ? LoadHeirs::of(api, ctx.api_token) : LoadHeirs());
  }

 private:
  // POST /loads; prints the test's id. Returns an exit code (0: `id` is set, and `spread` says
  // whether the test is spread over hosts).
  int submit(const Api& api, const json& scenario, const json& load, const json& vars,
             std::string& id, bool& spread) const {
    auto answer = api.send("POST", "/loads",
                           json{{"scenario", scenario}, {"load", load}, {"vars", vars}}.dump(),
                           kSubmitTimeoutMs + ready_timeout_ms(load));
    if (!answer) return report_failure(answer.status(), api.socket_path());
    const json reply = answer->json();
    if (answer->status != 201) {
      std::string message = json_string(reply, "error", "POST /loads failed with HTTP " +
                                                            std::to_string(answer->status));
      if (answer->status == 400) return usage_error(file_ + ": " + message);
      if (answer->status == 503) {  // no worker ready, or the daemon stopping: not the test's fault
        std::cerr << "corral: " << message << "\n";
        return kExitNotReady;
      }
      return fail(message);
    }
    id = json_string(reply, "load");
    std::cout << "corral: load " << id << ": " << json_string(scenario, "name") << " on "
              << counted(static_cast<long>(json_number(reply, "workers")), "worker", "workers");
    if (const json hosts = reply.value("hosts", json()); hosts.is_array()) {
      std::cout << " here and " << hosts.size() - 1 << " other hosts";  // docs/cluster.md
      spread = true;
    }
    std::cout << "\n" << std::flush;
    return 0;
  }

  // --find-max: one test per step (cli/find_max.h), each followed to its end without a live line.
  int find_max(const Api& api, const json& scenario, const json& load, const json& vars) const {
    KneeSearch search;
    auto p99 = p99_bound_ms(max_p99_);
    if (!p99) return usage_error(p99.status().message());
    auto errors = error_bound(max_errors_);
    if (!errors) return usage_error(errors.status().message());
    search.bounds.p99_ms = *p99;
    search.bounds.error_rate = *errors;
    search.factor = step_factor_;
    search.max_steps = max_steps_;
    search.duration = step_duration_;
    int code = 0;
    auto run_step = [&](const json& step_load) -> Result<api::LoadAnswer> {
      std::string id;
      bool spread = false;
      if (code = submit(api, scenario, step_load, vars, id, spread); code != 0) {
        return Status(Code::kUnavailable, "the daemon refused the step");
      }
      const bool tty = ::isatty(STDOUT_FILENO) != 0;
      TargetStopWait stop_wait;
      for (;;) {
        std::this_thread::sleep_for(kPollEvery);
        auto test = api.get("/loads/" + id);
        if (!test) return test.status();
        auto answer = read_answer("/loads/" + id, *test, &api::load_from_json);
        if (!answer) return answer.status();
        const bool ended = answer->state != "running";
        // The step's live line: rewritten in place on a terminal, a line a second into a pipe.
        if (tty) {
          std::cout << "\r\033[K" << (ended ? "" : render_load_progress(*answer)) << std::flush;
        } else if (!ended) {
          std::cout << render_load_progress(*answer) << "\n";
        }
        if (ended && stop_wait.again(*answer)) continue;  // its target must be gone first
        if (ended) return *answer;
      }
    };
    if (search_ == "bisect") return bisect(load, search, run_step);
    auto result = find_knee(load, search, run_step, std::cout);
    if (!result) return code != 0 ? code : fail(result.status().message());
    if (!out_.empty() && !write_file(out_, result->dump(2) + "\n")) {
      return fail("--out " + out_ + ": cannot write the search");
    }
    return (*result)["highest"].is_null() ? 1 : 0;
  }

  // --find-max --search bisect (cli/breaking_point.h), with the knee search's bounds and runner.
  int bisect(const json& load, const KneeSearch& knee,
             const std::function<Result<api::LoadAnswer>(const json&)>& run_probe) const {
    auto precision = error_bound(precision_);
    if (!precision) return usage_error("--precision " + precision_ + ": expected a share like 5%");
    if (fresh_target_ && !load.contains("target")) {
      return usage_error(
          "--fresh-target: the load section has no \"target\" and there is no "
          "--target-cmd: nothing to start for each probe");
    }
    BisectSearch search;
    search.bounds = knee.bounds;
    search.factor = step_factor_option_->count() > 0 ? step_factor_ : 2;
    search.precision = *precision;
    search.repeat = repeat_;
    search.max_probes = knee.max_steps;
    search.duration = knee.duration;
    auto result = find_breaking_point(load, search, run_probe, std::cout);
    if (!result) return fail(result.status().message());
    if (!out_.empty() && !write_file(out_, result->dump(2) + "\n")) {
      return fail("--out " + out_ + ": cannot write the search");
    }
    return (*result)["fails"].is_null() || (*result)["holds"].is_null() ? 1 : 0;
  }

  // Folds the flags into the load section; returns what is wrong, or "".
  std::string apply_flags(json& load) const {
    auto drop = [&](std::initializer_list<const char*> keys) {
      for (const char* k : keys) load.erase(k);
    };
    if (!stages_.empty()) {
      json stages = json::array();
      for (const std::string& s : stages_) {
        size_t colon = s.rfind(':');
        if (colon == std::string::npos) return "--stage " + s + ": expected DURATION:TARGET";
        stages.push_back({{"duration", s.substr(0, colon)}, {"target", json_or_text(s.substr(colon + 1))}});
      }
      drop({"vus", "rate", "connections", "duration"});
      load["stages"] = stages;
    }
    if (vus_ > 0) {
      drop({"rate", "connections", "stages", "start", "model", "max_vus"});
      load["vus"] = vus_;
    }
    if (rate_ > 0) {
      drop({"vus", "connections", "stages", "start", "model", "pace"});
      load["rate"] = rate_;
    }
    if (connections_ > 0) {
      drop({"vus", "rate", "stages", "start", "model", "max_vus"});
      load["connections"] = connections_;
    }
    if (!model_.empty()) load["model"] = model_;
    if (!duration_.empty()) load["duration"] = duration_;
    if (!pace_.empty()) load["pace"] = pace_;
    if (!think_.empty()) load["think"] = think_;
    if (!grace_.empty()) load["grace"] = grace_;
    if (max_vus_ > 0) load["max_vus"] = max_vus_;
    if (hosts_ == "all") {
      load["hosts"] = "all";
    } else if (!hosts_.empty()) {
      char* end = nullptr;
      long n = std::strtol(hosts_.c_str(), &end, 10);
      if (end == hosts_.c_str() || *end != '\0' || n < 1) {
        return "--hosts " + hosts_ + ": expected a number of hosts, or all";
      }
      load["hosts"] = n;
    }
    if (std::string e = apply_thresholds(load); !e.empty()) return e;
    if (std::string e = target_.apply(load, file_); !e.empty()) return e;
    if (watch_pid_ > 0) load["watch"]["pid"] = watch_pid_;
    if (!watch_url_.empty()) load["watch"]["url"] = watch_url_;
    for (const std::string& w : stop_when_) load["watch"]["stop_when"].push_back(w);
    if (load.empty()) {
      return file_ +
             ": no \"load\" section and no --vus, --rate, --connections or --stage: say how to "
             "load";
    }
    return "";
  }

  // --threshold METRIC: EXPRESSION, checked here so that a mistake is blamed on the flag. The
  // flags' thresholds of a metric replace the file's for that metric; the file's other metrics
  // stay.
  std::string apply_thresholds(json& load) const {
    json given = json::object();
    for (const std::string& t : thresholds_) {
      // The metric ends at the first ':' outside braces ("latency{step:login}: p99 < 1s").
      size_t colon = std::string::npos;
      int depth = 0;
      for (size_t i = 0; i < t.size() && colon == std::string::npos; ++i) {
        depth += t[i] == '{' ? 1 : t[i] == '}' ? -1 : 0;
        if (t[i] == ':' && depth == 0) colon = i;
      }
      if (colon == std::string::npos) return "--threshold " + t + ": expected METRIC: EXPRESSION";
      std::string metric = t.substr(0, colon);
      while (!metric.empty() && metric.back() == ' ') metric.pop_back();
      const std::string expression = t.substr(colon + 1);
      if (auto parsed = load::parse_threshold(metric, expression, "--threshold \"" + t + "\"");
          !parsed) {
        return parsed.status().message();
      }
      given[metric].push_back(expression);
    }
    for (const auto& [metric, expressions] : given.items())
      load["thresholds"][metric] = expressions;
    return "";
  }

  // Polls test `id` until it ends; a test over hosts is followed to the host that takes it over
  // when the one asked stops answering (`heirs`).
  int follow(Api api, const std::string& id, const Baseline& baseline,
             const LoadHeirs& heirs) const {
    const bool tty = ::isatty(STDOUT_FILENO) != 0;
    TargetStopWait stop_wait;
    for (;;) {
      auto body = api.get("/loads/" + id);
      if (!body && daemon_unreachable(body.status()) && !heirs.empty()) {
        std::cerr << (tty ? "\n" : "") << "corral: load " << id << ": " << api.socket_path()
                  << " does not answer (" << body.status().message()
                  << "); waiting for another host to take the test over\n";
        if (auto heir = heirs.find(id, kTakeOverWithin)) {
          std::cerr << "corral: load " << id << ": following it on " << heir->socket_path()
                    << ", its origin now\n";
          api = std::move(*heir);
          continue;
        }
      }
      if (!body) return report_failure(body.status(), api.socket_path());
      auto test = read_answer("/loads/" + id, *body, &api::load_from_json);
      if (!test) return fail(test.status().message());
      const std::string state = test->state;
      if (stop_wait.again(*test)) {
        std::this_thread::sleep_for(milliseconds(100));
        continue;
      }
      const bool ended = state != "running";
      const std::string line = render_load_progress(*test);
      if (tty) {
        std::cout << "\r\033[K" << line << (ended ? "\n" : "") << std::flush;
      } else {
        std::cout << line << "\n" << std::flush;
      }
      if (ended) return finish(LoadRecord{std::move(*test), std::move(*body)}, baseline);
      std::this_thread::sleep_for(kPollEvery);
    }
  }

  // The summary, the comparison with the baseline, and the reports, of a test that ended.
  int finish(const LoadRecord& record, const Baseline& baseline) const {
    const api::LoadAnswer& test = record.test;
    std::cout << render_load_summary(test);
    int code = test.state == "passed" ? 0 : 1;
    std::vector<JunitCase> cases;
    if (!baseline.tests.empty()) {
      Comparison c = compare_loads(baseline.tests, {test}, baseline.limits);
      std::cout << "\n"
                << render_comparison(
                       c, ::isatty(STDOUT_FILENO) ? TableStyle::kBox : TableStyle::kAscii);
      cases = comparison_cases(c, test.name, test.elapsed_s);
      if (c.regressed()) code = 1;
    }
    if (std::string e = write_load_reports({out_, html_, junit_}, record, cases, std::cout);
        !e.empty()) {
      return fail(e);
    }
    return code;
  }

  std::string file_;
  long vus_ = 0;
  double rate_ = 0;
  long connections_ = 0;
  std::vector<std::string> stages_;
  std::string model_;
  std::string duration_;
  std::string pace_;
  std::string think_;
  long max_vus_ = 0;
  std::string grace_;
  std::string hosts_;
  std::vector<std::string> thresholds_;
  std::vector<std::string> vars_;
  std::string out_;
  std::string junit_;
  std::string html_;
  std::string baseline_;
  std::vector<std::string> max_regressions_;
  bool find_max_ = false;
  std::string step_duration_ = "10s";
  double step_factor_ = 1.5;
  CLI::Option* step_factor_option_ = nullptr;
  std::string search_ = "knee";
  std::string precision_ = "5%";
  int repeat_ = 1;
  bool fresh_target_ = false;
  int max_steps_ = 12;
  std::string max_p99_ = "1s";
  std::string max_errors_ = "1%";
  long watch_pid_ = 0;
  TargetFlags target_;
  std::string watch_url_;
  std::vector<std::string> stop_when_;
  bool detach_ = false;
};

CORRAL_REGISTER_VERB(LoadVerb, "load", "run a scenario file as a load test")

}  // namespace
}  // namespace corral::cli::load_verb
