// Shell completion (cli/completion.h): what `corral completion --words -- WORDS...` offers for
// the last word, checked against the verb registry's own descriptions rather than a copy of them.
#include "cli/completion.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/cli_in_process.h"
#include "tests/support/scoped_env.h"
#include "tests/support/temp_dir.h"

#include "cli/entry.h"
#include "cli/verb.h"
#include "cli/verb_spec.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

using corral::test::ScopedEnv;
using corral::test::TempDir;
using Words = std::vector<std::string>;

// Sources that fail the test when asked: completion must not ask the daemon for a word that
// does not need it.
CompletionSources no_daemon_asked() {
  CompletionSources s;
  s.run_ids = []() -> Words {
    FAIL("asked the daemon for run ids");
    return {};
  };
  s.load_ids = []() -> Words {
    FAIL("asked the daemon for load ids");
    return {};
  };
  return s;
}

CompletionSources fake_daemon() {
  CompletionSources s;
  s.run_ids = [] { return Words{"r1-aaaa", "r2-bbbb", "r10-cccc"}; };
  s.load_ids = [] { return Words{"l1-dddd", "l2-eeee"}; };
  return s;
}

Words offered(const Words& words, const CompletionSources& sources = no_daemon_asked()) {
  return complete(words, describe_all(), sources);
}

bool has(const Words& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

const CommandSpec& spec_of(const std::string& verb) {
  static const std::vector<CommandSpec> all = describe_all();
  for (const CommandSpec& c : all) {
    if (c.name == verb) return c;
  }
  FAIL("no verb " << verb);
  return all.front();
}

const OptionSpec& option_of(const CommandSpec& c, const std::string& name) {
  for (const OptionSpec& o : c.options) {
    if (std::find(o.names.begin(), o.names.end(), name) != o.names.end()) return o;
  }
  FAIL(c.name << " has no option " << name);
  return c.options.front();
}

// Makes `dir` the working directory for a scope, where relative paths complete from.
class InDir {
 public:
  explicit InDir(const std::string& dir) : before_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InDir() { std::filesystem::current_path(before_); }
  InDir(const InDir&) = delete;
  InDir& operator=(const InDir&) = delete;

 private:
  std::filesystem::path before_;
};

using Run = test::CliRun;

Run run_cli(std::vector<std::string> args) { return test::run_in_process(std::move(args)); }

TEST_CASE("completion: an empty word in verb position offers every registered verb and alias") {
  const Words got = offered({"corral", ""});
  for (const VerbInfo* v : verbs()) {
    INFO(v->name);
    CHECK(has(got, v->name));
    for (const std::string& alias : v->aliases) CHECK(has(got, alias));
  }
  CHECK(has(got, "completion"));
  CHECK_FALSE(has(got, "--home"));  // options only for a word that starts with '-'
}

TEST_CASE("completion: a '-' word before the verb offers corral's global options") {
  CHECK(offered({"corral", "-"}) == Words{"--home", "--help", "--version"});
  CHECK(offered({"corral", "--ve"}) == Words{"--version"});
}

TEST_CASE("completion: only candidates that start with the word are offered") {
  Words expected;
  for (const VerbInfo* v : verbs()) {
    if (v->name.starts_with("sta")) expected.push_back(v->name);
    for (const std::string& a : v->aliases) {
      if (a.starts_with("sta")) expected.push_back(a);
    }
  }
  REQUIRE(has(expected, "start"));
  REQUIRE(has(expected, "status"));
  CHECK(offered({"corral", "sta"}) == expected);
  CHECK(offered({"corral", "zzz"}).empty());
  CHECK(offered({"corral", "--home", "/tmp", "stat"}) == Words{"status"});
}

TEST_CASE("completion: a '-' word after any verb offers each of its flags, --home included") {
  for (const CommandSpec& verb : describe_all()) {
    INFO(verb.name);
    const Words got = offered({"corral", verb.name, "-"});
    CHECK(has(got, "--home"));
    CHECK(has(got, "--help"));
    for (const OptionSpec& o : verb.options) {
      if (o.positional) continue;
      for (const std::string& name : o.names) CHECK(has(got, name));
    }
  }
  const Words run = offered({"corral", "run", "--"});
  CHECK(has(run, "--instances"));
  CHECK_FALSE(has(run, "-n"));  // "--" filters out the short names
  CHECK_FALSE(has(run, "file"));
}

TEST_CASE("completion: a subcommand's flags replace its verb's, --home kept") {
  for (const CommandSpec& verb : describe_all()) {
    for (const CommandSpec& sub : verb.subcommands) {
      INFO(verb.name << " " << sub.name);
      const Words got = offered({"corral", verb.name, sub.name, "-"});
      CHECK(has(got, "--home"));
      for (const OptionSpec& o : sub.options) {
        for (const std::string& name : o.names) CHECK(has(got, name) == !o.positional);
      }
    }
  }
  CHECK(has(offered({"corral", "config", "show", "--"}), "--json"));
  CHECK_FALSE(has(offered({"corral", "config", "check", "--"}), "--json"));
}

TEST_CASE("completion: a flag already given is not offered again, unless repeatable") {
  const Words got = offered({"corral", "run", "--detach", "--var", "a=1", "--"});
  CHECK_FALSE(has(got, "--detach"));
  CHECK(has(got, "--var"));
  CHECK(has(got, "--junit"));
}

TEST_CASE("completion: a verb with subcommands offers their names until one is typed") {
  CHECK(offered({"corral", "config", ""}) == Words{"check", "show"});
  for (const CommandSpec& verb : describe_all()) {
    INFO(verb.name);
    const Words got = offered({"corral", verb.name, ""}, fake_daemon());
    for (const CommandSpec& sub : verb.subcommands) CHECK(has(got, sub.name));
  }
  CHECK(offered({"corral", "schedule", "a"}) == Words{"add"});
  CHECK(offered({"corral", "schedule", "--home", "/tmp", "a"}) == Words{"add"});
}

TEST_CASE("completion: after a flag with a fixed set of values, offers that set") {
  const OptionSpec& search = option_of(spec_of("load"), "--search");
  REQUIRE(search.choices == Words{"knee", "bisect"});
  CHECK(offered({"corral", "load", "--search", ""}) == search.choices);
  CHECK(offered({"corral", "load", "--search", "b"}) == Words{"bisect"});
  CHECK(offered({"corral", "load", "--search=k"}) == Words{"--search=knee"});
  CHECK(offered({"corral", "load", "--search", "=", "k"}) == Words{"knee"});  // bash's split
  CHECK(offered({"corral", "load", "--search", "="}).empty());
  CHECK(offered({"corral", "load", "x.json", "--model", ""}) == Words{"closed", "open", "held"});
  for (const CommandSpec& verb : describe_all()) {
    for (const OptionSpec& o : verb.options) {
      if (o.positional || o.choices.empty()) continue;
      INFO(verb.name << " " << o.names.front());
      CHECK(offered({"corral", verb.name, o.names.front(), ""}) == o.choices);
    }
  }
}

TEST_CASE("completion: a flag's value with no known set offers nothing, then positionals go on") {
  CHECK(offered({"corral", "load", "--vus", ""}).empty());
  CHECK(offered({"corral", "load", "--vus", "-"}).empty());  // -5 may be a value
  CHECK(has(offered({"corral", "load", "--vus", "10", "-"}), "--rate"));
  CHECK(has(offered({"corral", "completion", ""}), "bash"));
  CHECK(offered({"corral", "completion", "bash", ""}).empty());
}

TEST_CASE("completion: scenario files are offered by extension, directories to descend into") {
  TempDir dir;
  for (const char* name : {"a.json", "b.yaml", "c.yml", "notes.txt", ".hidden.json", "json"}) {
    dir.write(name, "{}");
  }
  std::filesystem::create_directory(dir.path() + "/scenarios");
  std::filesystem::create_directory(dir.path() + "/.git");
  const std::string d = dir.path() + "/";
  CHECK(offered({"corral", "run", d}) == Words{d + "a.json", d + "scenarios/"});
  CHECK(offered({"corral", "run", d + "s"}) == Words{d + "scenarios/"});
  CHECK(offered({"corral", "run", d + "."}) == Words{d + ".git/", d + ".hidden.json"});
  CHECK(offered({"corral", "config", "check", d + "a"}) == Words{d + "a.json"});
  CHECK(offered({"corral", "schedule", "add", "nightly", d + "a"}) == Words{d + "a.json"});
  CHECK(offered({"corral", "run", d + "b"}).empty());  // b.yaml: not a scenario file
  CHECK(offered({"corral", "run", d + "missing/"}).empty());
  // A FILE option takes any file; a DIR option only directories.
  CHECK(offered({"corral", "run", "x.json", "--junit", d + "n"}) == Words{d + "notes.txt"});
  CHECK(offered({"corral", "--home", d}) == Words{d + "scenarios/"});
  CHECK(offered({"corral", "status", "--home", d}) == Words{d + "scenarios/"});
  CHECK(offered({"corral", "daemon", "--journal", d + "j"}) == Words{d + "json"});
}

TEST_CASE("completion: a path without a directory part lists the working directory") {
  TempDir dir;
  dir.write("smoke.json", "{}");
  dir.write("smoke.txt", "");
  const InDir in(dir.path());
  CHECK(complete_path("sm", PathKind::kScenario) == Words{"smoke.json"});
  CHECK(offered({"corral", "run", ""}) == Words{"smoke.json"});
  CHECK(offered({"corral", "report", "sm"}, CompletionSources{}) ==
        Words{"smoke.json", "smoke.txt"});
}

TEST_CASE("completion: run and load positionals offer the daemon's ids") {
  TempDir empty;  // no file to offer beside the load ids
  const InDir in(empty.path());
  const CompletionSources daemon = fake_daemon();
  CHECK(offered({"corral", "cancel", ""}, daemon) == Words{"r1-aaaa", "r2-bbbb", "r10-cccc"});
  CHECK(offered({"corral", "show", "r1"}, daemon) == Words{"r1-aaaa", "r10-cccc"});
  CHECK(offered({"corral", "resume", "--home", "/tmp", "r2"}, daemon) == Words{"r2-bbbb"});
  CHECK(offered({"corral", "report", "l"}, daemon) == Words{"l1-dddd", "l2-eeee"});
  CHECK(offered({"corral", "compare", "l1-dddd", "l2"}, daemon) == Words{"l2-eeee"});
  CHECK(offered({"corral", "load", "x.json", "--baseline", "l1"}, daemon) == Words{"l1-dddd"});
  CHECK(offered({"corral", "help", "comp"}, daemon) == Words{"compare", "completion"});
}

TEST_CASE("completion: an unknown verb, or a word after the last positional, offers nothing") {
  CHECK(offered({"corral", "frobnicate", ""}).empty());
  CHECK(offered({"corral", "cancel", "r1", ""}, fake_daemon()).empty());
}

TEST_CASE("completion: the daemon asked is the one --home on the line names") {
  ScopedEnv home_env("CORRAL_HOME", "/nonexistent/env-home");
  Context base;
  base.home = "/nonexistent/env-home";
  CHECK(completion_context({"corral", "cancel", ""}, base).home == "/nonexistent/env-home");
  const Context given = completion_context({"corral", "--home", "/tmp/h", "cancel", ""}, base);
  CHECK(given.home == "/tmp/h");
  CHECK(given.home_given);
  CHECK(completion_context({"corral", "cancel", "--home=/tmp/x", ""}, base).home == "/tmp/x");
  CHECK(completion_context({"corral", "cancel", "--home", "=", "/tmp/y", ""}, base).home ==
        "/tmp/y");
  CHECK(completion_context({"corral", "cancel", "--home", "/tmp/partial"}, base).home ==
        "/nonexistent/env-home");  // still being typed
  CHECK(completion_context({"corral", "status", "--home", "rel", ""}, base).home ==
        (std::filesystem::current_path() / "rel").string());
}

TEST_CASE("completion: with no daemon there are no run ids and nothing on stderr, exit 0") {
  TempDir home;
  ScopedEnv home_env("CORRAL_HOME", home.path().c_str());
  ScopedEnv api_env("CORRAL_API", nullptr);
  TempDir empty;  // no file to offer beside the load ids
  const InDir in(empty.path());
  Context ctx;
  ctx.home = home.path();
  const CompletionSources sources = daemon_sources(ctx);
  CHECK(sources.run_ids().empty());
  CHECK(sources.load_ids().empty());
  for (const Words& line : {Words{"corral", "cancel", ""}, Words{"corral", "report", "l"},
                            Words{"corral", "--home", home.path(), "show", ""}}) {
    Words args = {"completion", "--words", "--"};
    args.insert(args.end(), line.begin(), line.end());
    const Run r = run_cli(args);
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.empty());
  }
}

TEST_CASE("completion: --words prints one candidate a line, empty words and dashes included") {
  const Run verbs_run = run_cli({"completion", "--words", "--", "corral", ""});
  CHECK(verbs_run.code == 0);
  CHECK(verbs_run.out.find("\nstatus\n") != std::string::npos);
  CHECK(verbs_run.err.empty());
  const Run flags = run_cli({"completion", "--words", "--", "corral", "run", "--det"});
  CHECK(flags.out == "--detach\n");
  const Run global = run_cli({"completion", "--words", "--", "corral", "--"});
  CHECK(global.out == "--home\n--help\n--version\n");
}

TEST_CASE("completion: prints a script for bash, zsh and fish, and refuses another shell") {
  for (const std::string& shell : completion_shells()) {
    INFO(shell);
    const Run r = run_cli({"completion", shell});
    CHECK(r.code == 0);
    CHECK(r.out == completion_script(shell));
    CHECK(r.out.find("completion --words --") != std::string::npos);
  }
  CHECK(completion_script("bash").find("complete -F _corral corral") != std::string::npos);
  CHECK(completion_script("zsh").starts_with("#compdef corral\n"));
  CHECK(completion_script("fish").find("complete -c corral -f -a") != std::string::npos);
  CHECK(run_cli({"completion", "tcsh"}).code == kExitUsage);
  CHECK(run_cli({"completion"}).code == kExitUsage);
}

}  // namespace
}  // namespace corral::cli
