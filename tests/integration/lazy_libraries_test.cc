// libcurl and libpq are loaded when first used (shared/lazy_library.h): a worker whose requests
// all go through the lean client never maps libcurl, one that sends through libcurl does, and
// one that cannot load it fails those requests with the reason, without leaving; a master whose
// journal is SQLite never maps libpq, and one that cannot load it for a PostgreSQL journal says
// so and exits.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

// Whether process `pid` has `library` ("libcurl") mapped, from /proc/PID/maps.
bool maps(pid_t pid, const std::string& library) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  REQUIRE(maps);
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/" + library) != std::string::npos) return true;
  }
  return false;
}

bool maps_libcurl(pid_t pid) { return maps(pid, "libcurl"); }

// Runs one GET of {{base}}/echo on `d` and returns the instance's record.
Json run_one_request(Daemon& d, JobApi& api) {
  const Json s = Json::parse(R"({"name": "one request", "steps": [
    {"request": {"url": "{{base}}/echo"}, "expect": [{"status": 200}]}]})");
  const std::string id = submit_run(d, s, 1, api);
  wait_run_finished(d, id, seconds(20));
  return d.api("GET", "/runs/" + id + "/instances/0").json;
}

}  // namespace

TEST_CASE("lazy libraries: with the lean client and SQLite, neither libcurl nor libpq is loaded") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  const pid_t worker = d.wait_ready(1)[0]["pid"].get<pid_t>();
  const Json in = run_one_request(d, api);
  INFO(in.dump());
  REQUIRE(in["state"] == "passed");
  for (const pid_t pid : {worker, d.pid()}) {
    INFO("pid " << pid);
    CHECK_FALSE(maps(pid, "libcurl"));
    CHECK_FALSE(maps(pid, "libpq"));
    CHECK_FALSE(maps(pid, "libkrb5"));  // what both bring
  }
}

TEST_CASE("lazy libraries: a worker loads libcurl for its first request through it") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"http_client", "curl"}}));
  const pid_t worker = d.wait_ready(1)[0]["pid"].get<pid_t>();
  CHECK_FALSE(maps_libcurl(worker));
  const Json in = run_one_request(d, api);
  INFO(in.dump());
  REQUIRE(in["state"] == "passed");
  CHECK(maps_libcurl(worker));
}

TEST_CASE(
    "lazy libraries: without libcurl, requests through it fail saying so, and the worker stays") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions()
                     .with_workers(1)
                     .with_config({{"http_client", "curl"}})
                     .with_env("CORRAL_TEST_LIBCURL", "/nonexistent/libcurl.so.4"));
  const pid_t worker = d.wait_ready(1)[0]["pid"].get<pid_t>();
  const Json in = run_one_request(d, api);
  INFO(in.dump());
  CHECK(in["state"] == "errored");  // a transport error
  CHECK_THAT(in.dump(), Catch::Contains("libcurl cannot be loaded: /nonexistent/libcurl.so.4"));
  const Json w = d.worker(0);
  CHECK(w["pid"].get<pid_t>() == worker);
  CHECK(w["restarts"] == 0);
}

TEST_CASE("lazy libraries: without libpq, a PostgreSQL journal is refused, saying why") {
  TempHome home;
  const CliResult r = run_cli({"daemon", "--journal", "postgresql://corral@127.0.0.1:1/corral"},
                              home.path(), {{"CORRAL_TEST_LIBPQ", "/nonexistent/libpq.so.5"}});
  INFO(r.describe());
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("libpq cannot be loaded: /nonexistent/libpq.so.5"));
}
