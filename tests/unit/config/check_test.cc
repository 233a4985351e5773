// check_file(): every problem in a config file, as `corral config check` prints them.
#include "config/check.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "tests/support/scoped_env.h"
#include "tests/support/temp_dir.h"

namespace corral::config {
namespace {

using test::ScopedEnv;
using test::TempDir;

TEST_CASE("config check: a good file has no problems and counts its fields") {
  TempDir dir;
  const std::string path =
      dir.write("good.json", R"({"workers": 3, "max_memory": "256MB", "log_level": "debug"})");
  const FileCheck check = check_file(path);
  CHECK(check.problems.empty());
  CHECK(check.fields_set == 3);
}

TEST_CASE("config check: reports every bad field of a file, not only the first") {
  TempDir dir;
  // Keys are checked in nlohmann's (sorted) order; the good one in between changes nothing.
  const std::string path = dir.write("bad.json", R"({
    "workers": 5000,
    "max_memroy": "512MB",
    "log_level": "debug",
    "heartbeat_timeout": 5
  })");
  const FileCheck check = check_file(path);
  CHECK(check.fields_set == 4);
  REQUIRE(check.problems.size() == 3);
  CHECK(check.problems[0] == R"(heartbeat_timeout: expected a duration like "5s", got 5)");
  CHECK_THAT(check.problems[1],
             Catch::StartsWith(R"(unknown field "max_memroy" (did you mean "max_memory"?))"));
  CHECK(check.problems[2] == "workers: must be between 0 and 1024, got 5000");
}

TEST_CASE("config check: reports every cross-field problem after the fields' own") {
  TempDir dir;
  ScopedEnv token("CORRAL_API_TOKEN", nullptr);
  const std::string path = dir.write("cross.json", R"({
    "heartbeat_interval": "5s",
    "backoff_initial": "1m", "backoff_max": "1s",
    "listen": "0.0.0.0:7070",
    "log_files": 0
  })");
  const FileCheck check = check_file(path);
  REQUIRE(check.problems.size() == 4);
  CHECK(check.problems[0] == "log_files: must be between 1 and 1000, got 0");
  CHECK(check.problems[1] == "heartbeat_timeout (5s) must be greater than heartbeat_interval (5s)");
  CHECK(check.problems[2] == "backoff_max (1s) must be at least backoff_initial (1m)");
  CHECK_THAT(check.problems[3], Catch::StartsWith("listen: 0.0.0.0:7070 is not a loopback"));
}

TEST_CASE("config check: a secrets file the daemon would refuse is a problem") {
  TempDir dir;
  const std::string secrets = dir.write("secrets.json", R"({"TOKEN": "x"})");
  REQUIRE(::chmod(secrets.c_str(), 0644) == 0);
  const std::string path = dir.write("corral.json", R"({"secrets_file": ")" + secrets + R"("})");
  FileCheck check = check_file(path);
  REQUIRE(check.problems.size() == 1);
  CHECK(check.problems[0] == "secrets_file " + secrets +
                                 ": mode 0644 lets its group or others read it; make it 0600 "
                                 "(chmod 600)");

  REQUIRE(::chmod(secrets.c_str(), 0600) == 0);
  check = check_file(path);
  CHECK(check.problems.empty());
  CHECK(check.fields_set == 1);
}

TEST_CASE("config check: a file that is missing, not JSON or not an object is one problem") {
  TempDir dir;
  struct Case {
    std::string path;
    std::string problem_start;
  };
  const Case cases[] = {
      {dir.path() + "/absent.json", "cannot open: No such file or directory"},
      {dir.write("broken.json", "{\n  \"workers\": 3,\n  }\n"), "line 3, column 3: syntax error"},
      {dir.write("array.json", "[1, 2]"), "expected a JSON object of settings, got array"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.path);
    const FileCheck check = check_file(c.path);
    REQUIRE(check.problems.size() == 1);
    CHECK_THAT(check.problems[0], Catch::StartsWith(c.problem_start));
    CHECK(check.fields_set == 0);
  }
}

}  // namespace
}  // namespace corral::config
