// Runs over data rows through the real daemon: one instance per good row of a CSV or JSON Lines
// file, each reading its own row as {{row.<column>}}; bad rows are answered back by line and the
// others run; submissions the daemon cannot run are refused naming the field; `corral run
// --data` does the same from the command line.
#include <catch2/catch.hpp>

#include <fstream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

// Each instance asks corral-target to sleep its row's `ms` and captures what it says it slept.
Json sleep_per_row() {
  return {{"name", "rows"},
          {"steps",
           {{{"request", {{"url", "{{base}}/delay?ms={{row.ms}}&who={{row.email}}"}}},
             {"expect", {{"status", 200}}},
             {"capture", {{"slept", {{"json", "/slept_ms"}}}}}}}}};
}

ApiResponse post_data_run(Daemon& d, const Json& scenario, const Json& data, const JobApi& api) {
  return d.api("POST", "/runs",
               Json{{"scenario", scenario}, {"vars", {{"base", api.base()}}}, {"data", data}}.dump());
}

}  // namespace

TEST_CASE("data rows: one instance per good row, each reading its own, bad rows named by line") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  const std::string file = home.file("rows.csv");
  std::ofstream(file) << "email,ms\n"
                         "a@x.org,1\n"
                         "b@x.org,2\n"
                         "c@x.org\n"  // line 4: one field short
                         "\"d@x.org\",3\n"
                         "e@x.org,4\n";
  ApiResponse r = post_data_run(d, sleep_per_row(), {{"path", file}}, api);
  INFO(r.body);
  REQUIRE(r.status == 201);
  CHECK(r.json["instances"] == 4);
  CHECK(r.json["data"]["rows"] == 4);
  CHECK(r.json["data"]["skipped"] == 1);
  CHECK(r.json["data"]["bad"] == Json::parse(R"([{"line": 4, "error": "1 fields, the header has 2"}])"));
  const std::string id = r.json["run"];
  wait_run_finished(d, id, seconds(30));
  Json run = run_of(d, id);
  CHECK(run["counts"]["passed"] == 4);
  CHECK(run["data"]["path"] == file);
  CHECK(run["data"]["columns"] == Json{"email", "ms"});
  CHECK_FALSE(run["data"].contains("index"));
  Json all = instances_of(d, id, 4);
  REQUIRE(all.size() == 4);
  const int slept[] = {1, 2, 3, 4};  // the good rows, in file order
  for (const Json& in : all) {
    INFO(in.dump());
    CHECK(in["vars"]["slept"] == slept[in["i"].get<int>()]);
    CHECK_FALSE(in["vars"].contains("row.ms"));  // rows are read on the worker, never sent
  }
}

TEST_CASE("data rows: JSON Lines keep their types, and what cannot run is refused naming why") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const std::string file = home.file("rows.jsonl");
  std::ofstream(file) << R"({"email": "a@x.org", "ms": 5})" "\n" R"({"email": "b@x.org", "ms": 6})" "\n";
  ApiResponse ok = post_data_run(d, sleep_per_row(), {{"path", file}, {"key", "email"}}, api);
  INFO(ok.body);
  REQUIRE(ok.status == 201);
  wait_run_finished(d, ok.json["run"], seconds(30));
  CHECK(run_of(d, ok.json["run"])["counts"]["passed"] == 2);

  auto refused = [&](const Json& scenario, const Json& body_data, const std::string& extra = "") {
    Json body = {{"scenario", scenario}, {"vars", {{"base", api.base()}}}, {"data", body_data}};
    if (!extra.empty()) body["instances"] = 3;
    ApiResponse r = d.api("POST", "/runs", body.dump());
    INFO(r.body);
    CHECK(r.status == 400);
    return r.json.value("error", "");
  };
  CHECK(refused(sleep_per_row(), {{"path", "rows.csv"}}) ==
        "data.path: expected an absolute path on the daemon's host, got \"rows.csv\"");
  CHECK(refused(sleep_per_row(), {{"path", home.file("none.csv")}}) ==
        "data: cannot read " + home.file("none.csv") + ": No such file or directory");
  CHECK(refused(sleep_per_row(), {{"path", file}}, "with instances") ==
        "instances: a run over data has one instance per row; leave it out");
  Json typo = sleep_per_row();
  typo["steps"][0]["request"]["url"] = "{{base}}/delay?ms={{row.msec}}";
  CHECK(
      refused(typo, {{"path", file}}) ==
      R"(scenario.steps[0].request.url: unknown variable "row.msec" (did you mean "row.ms"?) in "{{base}}/delay?ms={{row.msec}}")");
  CHECK(refused(sleep_per_row(), {{"path", file}, {"key", "id"}}) ==
        "data: " + file + ": the key column \"id\" is not one of its columns");
  CHECK(refused(sleep_per_row(), {{"path", home.file("x.txt")}}) ==
        "data.format: missing, and " + home.file("x.txt") + " does not end in .csv, .jsonl or .ndjson");
}

TEST_CASE("data rows: corral run --data runs a row each and says which rows it skipped") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const std::string scenario = home.file("s.json");
  std::ofstream(scenario) << sleep_per_row().dump();
  const std::string rows = home.file("rows.csv");
  std::ofstream(rows) << "email,ms\na@x.org,1\nbad\nb@x.org,2\n";
  CliResult run = run_cli({"run", scenario, "--data", rows, "--var", "base=" + api.base()}, home.path());
  INFO(run.describe());
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::Contains("2 instances of rows, one per row of " + rows));
  CHECK_THAT(run.err, Catch::Contains("1 row skipped:\n  line 3: 1 fields, the header has 2"));
  CHECK(run_cli({"run", scenario, "--data", rows, "-n", "2"}, home.path()).exit_code == 2);
  CHECK(run_cli({"run", scenario, "--key", "email"}, home.path()).exit_code == 2);
}

TEST_CASE("data rows: the key column names instances, for the API and corral show RUN/KEY") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const std::string file = home.file("rows.csv");
  std::ofstream(file) << "email,ms\na+1@x.org,1\nb@x.org,2\n";
  ApiResponse r = post_data_run(d, sleep_per_row(), {{"path", file}, {"key", "email"}}, api);
  INFO(r.body);
  REQUIRE(r.status == 201);
  const std::string id = r.json["run"];
  wait_run_finished(d, id, seconds(30));
  ApiResponse one = d.api("GET", "/runs/" + id + "/instances/b%40x.org");
  INFO(one.body);
  REQUIRE(one.status == 200);
  CHECK(one.json["i"] == 1);
  CHECK(one.json["key"] == "b@x.org");
  CHECK(one.json["row"] == Json{{"email", "b@x.org"}, {"ms", "2"}});
  CHECK(d.api("GET", "/runs/" + id + "/instances/0").json["key"] == "a+1@x.org");
  ApiResponse none = d.api("GET", "/runs/" + id + "/instances/zz%40x.org");
  CHECK(none.status == 404);
  CHECK(none.json["error"] == "run " + id + " has no instance with email \"zz@x.org\"");
  CliResult show = run_cli({"show", id + "/a+1@x.org"}, home.path());
  INFO(show.describe());
  CHECK(show.exit_code == 0);
  CHECK_THAT(show.out, Catch::StartsWith("instance 0: passed"));
  CHECK_THAT(show.out, Catch::Contains("row: {\"email\":\"a+1@x.org\",\"ms\":\"1\"}"));
}
