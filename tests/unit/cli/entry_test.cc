// The CLI entry point, run in-process: exit codes and the lines a user sees.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_in_process.h"
#include "tests/support/temp_dir.h"

#include "cli/api.h"
#include "cli/entry.h"
#include "shared/exit_codes.h"

namespace corral::cli {
namespace {

using Run = test::CliRun;

Run run(std::vector<std::string> args) { return test::run_in_process(std::move(args)); }

using corral::test::TempDir;

TEST_CASE("cli: an unknown verb is one error line plus the verb list, exit 2") {
  const Run r = run({"frobnicate"});
  CHECK(r.code == kExitUsage);
  CHECK(r.err.rfind("corral: unknown verb 'frobnicate'\n", 0) == 0);
  CHECK(r.err.find("  status") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("cli: status with a home where no daemon runs says so in one line, exit 3") {
  TempDir home;
  for (const char* verb : {"status", "ls", "jlist", "stop", "scale"}) {
    INFO(verb);
    std::vector<std::string> args = {verb, "--home", home.path()};
    if (std::string(verb) == "scale") args.push_back("2");
    const Run r = run(args);
    CHECK(r.code == kExitDaemonNotRunning);
    CHECK(r.err == "corral: daemon is not running (no answer on " + home.path() +
                       "/corral.sock); start it with 'corral start'\n");
  }
}

TEST_CASE("cli: with no daemon in its home, the message points to the service's home") {
  TempDir service;
  TempDir home;
  const std::string asked = home.path() + "/corral.sock";
  CHECK(service_hint(asked, service.path()).empty());  // no service running there
  service.write("corral.sock", "");
  CHECK(service_hint(asked, service.path()) == "; the corral service's daemon is in " +
                                                   service.path() +
                                                   ": export CORRAL_HOME=" + service.path());
  CHECK(service_hint(service.path() + "/corral.sock", service.path()).empty());  // asked there
}

TEST_CASE("cli: --home also works before the verb") {
  TempDir home;
  const Run r = run({"--home", home.path(), "status"});
  CHECK(r.code == kExitDaemonNotRunning);
  CHECK(r.err.find(home.path() + "/corral.sock") != std::string::npos);
}

TEST_CASE("cli: bad options for a verb are a usage error, exit 2") {
  CHECK(run({"status", "--bogus"}).code == kExitUsage);
  CHECK(run({"restart", "x"}).code == kExitUsage);
  CHECK(run({"describe"}).code == kExitUsage);  // SLOT is required
}

TEST_CASE("cli: help and version print to stdout and exit 0") {
  const Run help = run({"help"});
  CHECK(help.code == 0);
  CHECK(help.out == render_help());
  const Run verb_help = run({"help", "logs"});
  CHECK(verb_help.code == 0);
  CHECK(verb_help.out.find("--follow") != std::string::npos);
  CHECK(run({"--help"}).out == render_help());
  CHECK(run({"--version"}).out == "corral " CORRAL_VERSION "\n");
}

// Whether git, run in the source tree with `args`, succeeds.
bool git(const std::string& args) {
  const std::string cmd = "git -C '" CORRAL_SOURCE_DIR "' " + args + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

TEST_CASE("cli: version names the commit, the build and the libraries it runs with") {
  const Run text = run({"version"});
  CHECK(text.code == 0);
  INFO(text.out);
  CHECK(text.out.rfind("corral " CORRAL_VERSION "\n", 0) == 0);
  for (const char* line :
       {"\n  commit    ", "\n  build     ", "\n  libuv     ", "\n  libcurl   ", "\n  OpenSSL   ",
        "\n  SQLite    ", "\n  libpq     ", "\n  nghttp2   ", "\n  kernel    Linux "}) {
    CHECK(text.out.find(line) != std::string::npos);
  }
  const Run as_json = run({"version", "--json"});
  CHECK(as_json.code == 0);
  const nlohmann::json v = nlohmann::json::parse(as_json.out);
  INFO(v.dump());
  CHECK(v["version"] == CORRAL_VERSION);
  CHECK(v["dirty"].is_boolean());
  CHECK(v["build_type"].is_string());
  for (const char* lib : {"libuv", "libcurl", "OpenSSL", "SQLite", "libpq", "nghttp2"}) {
    const std::string version = v["libraries"].value(lib, "");
    CHECK_THAT(version, Catch::Matches("[0-9]+\\.[0-9]+.*"));
  }
  CHECK(v["kernel"].get<std::string>().rfind("Linux ", 0) == 0);
  // Built from a git checkout, the commit is one of the tree's history: the one it is at, or an
  // earlier one when commits were made since the build.
  if (!git("rev-parse HEAD")) {
    CHECK(v["commit"].is_null());
  } else {
    REQUIRE(v["commit"].is_string());
    const std::string commit = v["commit"];
    CHECK_THAT(commit, Catch::Matches("[0-9a-f]{40}"));
    CHECK(git("merge-base --is-ancestor " + commit + " HEAD"));
    CHECK(text.out.find("\n  commit    " + commit) != std::string::npos);
  }
}

TEST_CASE("cli: no verb at all prints the verb list and exits 2") {
  const Run r = run({});
  CHECK(r.code == kExitUsage);
  CHECK(r.err == render_help());
}

TEST_CASE("cli: a bad setting for daemon is reported before anything starts, exit 78") {
  TempDir home;
  const Run r = run({"daemon", "--home", home.path(), "--max-memory", "lots"});
  CHECK(r.code == kExitInitFailed);
  CHECK(r.err.rfind("corral: --max-memory: ", 0) == 0);
}

TEST_CASE("cli: logs reads the files under home without a daemon") {
  TempDir home;
  std::filesystem::create_directories(home.path() + "/logs");
  std::ofstream(home.path() + "/logs/master.log") << "a\nb\nc\n";
  std::ofstream(home.path() + "/logs/worker-0.log") << "w1\nw2";
  const Run all = run({"logs", "--home", home.path(), "--lines", "2"});
  CHECK(all.code == 0);
  CHECK(all.out == home.path() + "/logs/master.log last 2 lines:\nb\nc\n\n" + home.path() +
                       "/logs/worker-0.log last 2 lines:\nw1\nw2\n\n");
  const Run one = run({"logs", "0", "--home", home.path(), "--lines", "1"});
  CHECK(one.out == home.path() + "/logs/worker-0.log last 1 lines:\nw2\n\n");
  CHECK(run({"logs", "7", "--home", home.path()}).code == 1);
  CHECK(run({"logs", "nope", "--home", home.path()}).code == kExitUsage);
}

}  // namespace
}  // namespace corral::cli
