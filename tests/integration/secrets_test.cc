// Secrets: `{{secret.NAME}}` reaches the target, and its value reaches nothing else: not the
// journal, the logs, the API, `corral show`, a failed step's response or a JUnit report.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

const std::string kFileSecret = "file-secret-7c1e9a";
const std::string kEnvSecret = "env-secret-42d0b8";

std::string write_secrets(const TempHome& home, mode_t mode) {
  std::string path = home.file("secrets.json");
  std::ofstream(path) << Json{{"API_KEY", kFileSecret}}.dump();
  REQUIRE(::chmod(path.c_str(), mode) == 0);
  return path;
}

// Every file under `dir` (recursively) that holds `needle`.
std::vector<std::string> files_holding(const std::string& dir, const std::string& needle) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && read_file(e.path()).find(needle) != std::string::npos) {
      found.push_back(e.path());
    }
  }
  return found;
}

}  // namespace

TEST_CASE("secrets: a secrets file that its group or others can read stops the start") {
  TempHome home;
  std::string secrets = write_secrets(home, 0644);
  std::string config = home.write_config({{"secrets_file", secrets}, {"listen", "off"}});
  CliResult r = run_cli({"daemon", "--config", config}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("secrets_file " + secrets +
                                    ": mode 0644 lets its group or others read it; make it 0600"));
}

TEST_CASE("secrets: values reach the target and nothing that is stored or shown") {
  TempHome home;
  JobApi api;
  std::string secrets = write_secrets(home, 0600);
  Daemon d(home, DaemonOptions()
                     .with_workers(1)
                     .with_config({{"secrets_file", secrets}})
                     .with_env("CORRAL_SECRET_ENV_TOKEN", kEnvSecret));
  d.wait_ready(1);
  // Step 1 sends both secrets and captures the echo of one; step 2 sends it back and fails
  // with a reason that quotes the body holding both values.
  Json s = Json::parse(R"({
    "name": "secrets",
    "steps": [
      {"request": {"url": "{{base}}/echo?key={{secret.API_KEY}}",
                   "headers": {"Authorization": "Bearer {{secret.API_KEY}}",
                               "X-Env": "{{secret.ENV_TOKEN}}"}},
       "expect": [{"json": "/headers/x-env", "matches": "^env-secret-"}],
       "capture": {"seen": {"json": "/headers/authorization"}, "echo": {"body": true}}},
      {"request": {"method": "POST", "url": "{{base}}/echo", "body": "{{seen}} {{secret.ENV_TOKEN}}"},
       "expect": [{"json": "/body", "equals": "something else"}]}
    ]})");
  std::string scenario_file = home.file("scenario.json");
  std::ofstream(scenario_file) << s.dump();
  std::string junit = home.file("report.xml");
  CliResult run =
      run_cli({"run", scenario_file, "-n", "3", "--var", "base=" + api.base(), "--junit", junit},
              home.path(), {}, seconds(60));
  INFO(run.describe());
  CHECK(run.exit_code == 1);  // step 2 fails on purpose

  std::string id = d.api("GET", "/runs").json["runs"][0]["id"];
  Json in = d.api("GET", "/runs/" + id + "/instances/0").json;
  INFO(in.dump());
  // The target saw the real value: step 1's condition on it held.
  CHECK(in["steps"][0]["state"] == "passed");
  CHECK(in["vars"]["seen"] == "Bearer ***");
  CHECK(in["steps"][1]["reason"] ==
        "expect: /body was \"Bearer *** ***\", expected \"something else\"");
  // The failed step keeps the start of the echo, the secrets in it masked: in the API, in
  // `corral show` under the steps, and in the JUnit failure.
  const std::string body = in["steps"][1].value("body", "");
  CHECK_THAT(body, Catch::StartsWith("{\"body\":\"Bearer *** ***\",\"headers\":{"));
  CHECK_THAT(body, Catch::Contains("\"path\":\"/echo\""));
  CHECK_FALSE(in["steps"][0].contains("body"));
  const std::string instance = run_cli({"show", id + "/0"}, home.path()).out;
  CHECK_THAT(instance,
             Catch::Contains("response of step 1 (POST {{base}}/echo):\n  " + body + "\n"));
  CHECK_THAT(read_file(junit),
             Catch::Contains("&#10;response: {&quot;body&quot;:&quot;Bearer *** ***"));

  std::string shown = instance + run_cli({"show", id}, home.path()).out + run.out + run.err +
                      d.api("GET", "/runs/" + id + "/instances?steps=true").body +
                      d.api("GET", "/runs/" + id).body + read_file(junit);
  CHECK_THAT(shown, Catch::Contains("***"));
  for (const std::string& value : {kFileSecret, kEnvSecret}) {
    CHECK(shown.find(value) == std::string::npos);
    // The journal (with its WAL) and every log file.
    CHECK(files_holding(home.path() + "/logs", value).empty());
    auto stored = files_holding(home.path(), value);
    // Only the secrets file itself holds the file's secret.
    std::erase(stored, secrets);
    CHECK(stored == std::vector<std::string>{});
  }
}
