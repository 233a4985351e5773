// Shell completion for real: bash sources `corral completion bash`, its _corral function is called
// the way readline calls it, and what it leaves in COMPREPLY is what a user would be offered,
// including the run ids of a daemon started in a temporary home.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <utility>

#include <catch2/catch.hpp>

#include "tests/support/harness.h"
#include "tests/support/harness_runs.h"

namespace corral::test {
namespace {

bool has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// The environment of a shell where `corral` is the binary under test, found on $PATH.
std::map<std::string, std::string> shell_env(std::map<std::string, std::string> env = {}) {
  const std::string dir = std::filesystem::path(corral_binary()).parent_path().string();
  const char* path = std::getenv("PATH");
  env["PATH"] = dir + ":" + (path != nullptr ? path : "/usr/bin:/bin");
  return env;
}

// Runs bash -c `script` after sourcing the completion script.
CliResult bash_with_completion(const std::string& script, const std::string& home = "",
                               const std::map<std::string, std::string>& env = {}) {
  return run_program("/bin/bash", {"-c", "source <(corral completion bash) || exit 9\n" + script},
                     home, shell_env(env), seconds(20));
}

// What bash offers for the command line `words` (a bash array's body, e.g. `corral sta` or
// `corral run ""`) with the cursor in its last word: COMPREPLY after _corral, one a line.
std::vector<std::string> bash_offers(const std::string& words, const std::string& home = "",
                                     const std::map<std::string, std::string>& env = {}) {
  const CliResult r = bash_with_completion(
      "COMP_WORDS=(" + words +
          ")\n"
          "COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
          "_corral\n"
          "if (( ${#COMPREPLY[@]} )); then printf '%s\\n' \"${COMPREPLY[@]}\"; fi\n",
      home, env);
  INFO("bash completing `" << words << "`: " << r.describe());
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  return r.out.empty() ? std::vector<std::string>{} : lines_of(r.out);
}

// The absolute path of `program` on $PATH, or "" when it is not installed.
std::string installed(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

TEST_CASE("completion: bash registers _corral for corral and completes verbs and flags") {
  const CliResult registered = bash_with_completion("complete -p corral");
  INFO(registered.describe());
  CHECK(registered.exit_code == 0);
  CHECK(registered.out == "complete -F _corral corral\n");

  const std::vector<std::string> verbs = bash_offers("corral sta");
  CHECK(has(verbs, "start"));
  CHECK(has(verbs, "status"));
  CHECK_FALSE(has(verbs, "stop"));
  CHECK(has(bash_offers("corral \"\""), "completion"));
  CHECK(bash_offers("corral run --det") == std::vector<std::string>{"--detach"});
  CHECK(bash_offers("corral load x.json --search \"\"") ==
        std::vector<std::string>{"knee", "bisect"});
  CHECK(bash_offers("corral config \"\"") == std::vector<std::string>{"check", "show"});
  CHECK(has(bash_offers("corral config show --"), "--json"));
}

TEST_CASE("completion: bash completes scenario files and directories from the word's directory") {
  TempHome dir;
  std::ofstream(dir.file("smoke.json")) << "{}";
  std::ofstream(dir.file("notes.txt")) << "";
  std::filesystem::create_directory(dir.file("nested"));
  CHECK(bash_offers("corral run " + dir.path() + "/") ==
        std::vector<std::string>{dir.file("nested/"), dir.file("smoke.json")});
  CHECK(bash_offers("corral run " + dir.path() + "/n") ==
        std::vector<std::string>{dir.file("nested/")});
}

TEST_CASE("completion: bash offers the run ids of the daemon that --home or $CORRAL_HOME names") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  const Json scenario = {{"name", "nap"}, {"steps", Json::array({{{"sleep", "10ms"}}})}};
  const std::string id = post_run(d, scenario, 1);

  CHECK(has(bash_offers("corral cancel \"\"", home.path()), id));
  CHECK(bash_offers("corral show " + id.substr(0, id.size() - 1), home.path()) ==
        std::vector<std::string>{id});
  // --home on the line wins over $CORRAL_HOME, before or after the verb.
  TempHome elsewhere;
  CHECK(has(bash_offers("corral --home " + home.path() + " show \"\"", elsewhere.path()), id));
  CHECK(has(bash_offers("corral resume --home " + home.path() + " \"\"", elsewhere.path()), id));
  // No daemon there: nothing offered, nothing printed.
  CHECK(bash_offers("corral cancel \"\"", elsewhere.path()).empty());
}

TEST_CASE("completion: zsh and fish scripts are printed, and parse where those shells exist") {
  TempHome dir;
  const CliResult bash = run_cli({"completion", "bash"});
  CHECK(bash.exit_code == 0);
  std::ofstream(dir.file("corral.bash")) << bash.out;
  CHECK(run_program("/bin/bash", {"-n", dir.file("corral.bash")}).exit_code == 0);

  const CliResult zsh = run_cli({"completion", "zsh"});
  INFO(zsh.describe());
  CHECK(zsh.exit_code == 0);
  CHECK(zsh.out.rfind("#compdef corral\n", 0) == 0);
  CHECK(zsh.out.find("compadd") != std::string::npos);
  const CliResult fish = run_cli({"completion", "fish"});
  INFO(fish.describe());
  CHECK(fish.exit_code == 0);
  CHECK(fish.out.find("complete -c corral -f -a") != std::string::npos);
  CHECK(fish.out.find("commandline -opc") != std::string::npos);

  for (const auto& [shell, script] : {std::pair{"zsh", zsh.out}, std::pair{"fish", fish.out}}) {
    const std::string exe = installed(shell);
    if (exe.empty()) {
      std::cout << shell << " is not installed: the syntax of its script is not checked\n";
      continue;
    }
    const std::string file = dir.file(std::string("corral.") + shell);
    std::ofstream(file) << script;
    const CliResult parsed = run_program(exe, {"-n", file});
    INFO(shell << " -n: " << parsed.describe());
    CHECK(parsed.exit_code == 0);
  }
  CHECK(run_cli({"completion", "tcsh"}).exit_code == 2);
}

}  // namespace
}  // namespace corral::test
