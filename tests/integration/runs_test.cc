// Runs end to end: the real daemon runs scenarios against a real corral-target on 127.0.0.1.
#include <catch2/catch.hpp>

#include <signal.h>

#include <fstream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

Json job_scenario(int polls_to_done, const std::string& every = "100ms") {
  return Json::parse(R"({
    "name": "job-a",
    "steps": [
      {"name": "start A", "request": {"method": "POST", "url": "{{base}}/jobs",
                                      "json": {"polls_to_done": )" +
                     std::to_string(polls_to_done) + R"(}},
       "expect": [{"status": 201}], "capture": {"job": {"json": "/id"}}},
      {"name": "wait for A", "request": {"url": "{{base}}/jobs/{{job}}"},
       "poll": {"every": ")" +
                     every + R"(", "timeout": "2m",
                "until": [{"json": "/status", "equals": "done"}]}},
      {"name": "breathe", "sleep": "50ms"}
    ]})");
}

}  // namespace

TEST_CASE("runs: 500 instances of a polling scenario all pass, with each step recorded") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  std::string id = submit_run(d, job_scenario(3), 500, api);
  wait_run_finished(d, id, seconds(60));
  Json run = run_of(d, id);
  CHECK(run["counts"]["passed"] == 500);
  CHECK(run["counts"]["failed"] == 0);
  CHECK(run["duration_ms"]["p50"].get<int64_t>() >= 250);  // two poll intervals at least
  CHECK(run["failures"].empty());

  Json in = d.api("GET", "/runs/" + id + "/instances/123").json;
  CHECK(in["state"] == "passed");
  REQUIRE(in["steps"].size() == 3);
  CHECK(in["steps"][1]["name"] == "wait for A");
  CHECK(in["steps"][1]["attempts"] == 3);
  CHECK(in["steps"][1].contains("until_ms"));
  CHECK(api.stats()["jobs"] == 500);
  // Traffic is per transition: both workers took part.
  Json listed = d.api("GET", "/runs").json["runs"];
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["id"] == id);
}

TEST_CASE("runs: a failing condition marks instances failed and names the reason") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json s = job_scenario(2);
  s["steps"][1]["poll"]["max_attempts"] = 1;  // the job needs two polls: this fails
  std::string id = submit_run(d, s, 20, api);
  wait_run_finished(d, id, seconds(30));
  Json run = run_of(d, id);
  CHECK(run["counts"]["failed"] == 20);
  REQUIRE(run["failures"].size() == 1);
  CHECK(run["failures"][0]["count"] == 20);
  CHECK(run["failures"][0]["step"] == 1);
  CHECK_THAT(run["failures"][0]["reason"].get<std::string>(),
             Catch::Contains("until not met after 1 attempts"));
  auto failed = d.api("GET", "/runs/" + id + "/instances?state=failed&limit=5").json;
  CHECK(failed["instances"].size() == 5);
  CHECK(d.api("GET", "/runs/" + id + "/instances?state=passed").json["instances"].empty());
}

TEST_CASE("runs: bad submissions are refused with the field at fault, before anything runs") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  Json bad_every = {{"scenario", Json::parse(R"({"name": "x", "steps": [
      {"request": {"url": "http://127.0.0.1:1/"},
       "poll": {"every": 10, "until": [{"status": 200}], "timeout": "1s"}}]})")},
                    {"instances", 1}};
  auto r = d.api("POST", "/runs", bad_every.dump());
  CHECK(r.status == 400);
  CHECK(r.json["error"] ==
        "scenario.steps[0].poll.every: expected a duration like \"10s\", got 10");
  auto zero = d.api("POST", "/runs", R"({"scenario": {"name":"x","steps":[{"sleep":"1s"}]},
                                         "instances": 0})");
  CHECK(zero.status == 400);
  CHECK_THAT(zero.json["error"].get<std::string>(), Catch::StartsWith("instances:"));
  CHECK(d.api("POST", "/runs", "{not json").status == 400);
  CHECK(d.api("GET", "/runs/nope").status == 404);
  CHECK(d.api("GET", "/runs").json["runs"].empty());
}

TEST_CASE("runs: instances on a worker killed mid-run resume elsewhere and still pass") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  std::string id = submit_run(d, job_scenario(20, "100ms"), 400, api);  // about 2 s each
  d.wait_until([&] { return d.worker(0)["active"].get<int>() > 0; }, seconds(10),
               "slot 0 to run instances");
  pid_t victim = d.worker(0)["pid"].get<pid_t>();
  REQUIRE(::kill(victim, SIGKILL) == 0);
  wait_run_finished(d, id, seconds(60));
  Json run = run_of(d, id);
  CHECK(run["counts"]["passed"] == 400);
  auto all = d.api("GET", "/runs/" + id + "/instances?limit=400").json["instances"];
  // Those of the killed worker resumed after its signal. On a loaded machine the master may
  // also have moved waiting instances from a busy worker to an idle one (rebalanced).
  int resumed = 0;
  for (const auto& in : all) {
    for (const auto& why : in["resume_reasons"]) {
      INFO(in.dump());
      CHECK((why == "worker_signal" || why == "rebalanced"));
      resumed += why == "worker_signal" ? 1 : 0;
    }
  }
  CHECK(resumed > 0);
}

TEST_CASE("runs: cancelling a run stops its instances and its traffic") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  std::string id = submit_run(d, job_scenario(1000000, "50ms"), 100, api);
  d.wait_until([&] { return run_of(d, id)["counts"]["running"] == 100; }, seconds(10),
               "all instances running");
  auto r = d.api("DELETE", "/runs/" + id);
  CHECK(r.status == 200);
  CHECK(r.json["cancelled"] == 100);
  Json run = run_of(d, id);
  CHECK(run["state"] == "cancelled");
  CHECK(run["counts"]["cancelled"] == 100);
  d.wait_until([&] { return d.worker(0)["active"] == 0 && d.worker(1)["active"] == 0; }, seconds(5),
               "workers to drop the cancelled instances");
  int64_t polls = api.stats()["polls"];
  hold_for([&] { return api.stats()["polls"].get<int64_t>() <= polls + 200; }, milliseconds(500),
           "no more polls after the cancel");
}

TEST_CASE("runs: corral run exits 0 when every instance passed and 1 otherwise") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  std::string good = home.file("good.json"), bad = home.file("bad.json");
  std::ofstream(good) << job_scenario(1).dump();
  Json failing = job_scenario(2);
  failing["steps"][1]["poll"]["max_attempts"] = 1;
  std::ofstream(bad) << failing.dump();
  auto ok = run_cli({"run", good, "-n", "5", "--var", "base=" + api.base()}, home.path());
  INFO(ok.describe());
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("5 passed"));
  auto ko = run_cli({"run", bad, "-n", "3", "--var", "base=" + api.base()}, home.path());
  INFO(ko.describe());
  CHECK(ko.exit_code == 1);
  CHECK_THAT(ko.out, Catch::Contains("3 failed"));
  auto runs = run_cli({"runs"}, home.path());
  CHECK(runs.exit_code == 0);
  CHECK_THAT(runs.out, Catch::Contains("job-a"));
}

TEST_CASE("runs: 5,000 instances of one run all run at once, not a handful at a time") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  Json s = Json::parse(R"({"name": "wide", "steps": [
      {"request": {"method": "POST", "url": "{{base}}/jobs", "json": {"done_after_ms": 4000}},
       "expect": [{"status": 201}], "capture": {"job": {"json": "/id"}}},
      {"request": {"url": "{{base}}/jobs/{{job}}"},
       "poll": {"every": "500ms", "timeout": "1m",
                "until": [{"json": "/status", "equals": "done"}]}}]})");
  std::string id = submit_run(d, s, 5000, api);
  // Every job exists before the first one can be done: all instances started together.
  wait_for([&] { return api.stats()["jobs"].get<int>() == 5000; }, seconds(20),
           "5,000 jobs created");
  CHECK(run_of(d, id)["counts"]["passed"] == 0);
  CHECK(run_of(d, id)["counts"]["running"] == 5000);
  wait_run_finished(d, id, seconds(90));
  CHECK(run_of(d, id)["counts"]["passed"] == 5000);
}

TEST_CASE("runs: retries pass a flaky step, a capture feeds the next URL, a poll times out") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json s = Json::parse(R"({"name": "mixed", "steps": [
      {"name": "flaky", "request": {"url": "{{base}}/flaky/{{run}}-{{instance}}?fail=2"},
       "expect": [{"status": 200}],
       "retry": {"attempts": 3, "initial_interval": "20ms"},
       "capture": {"attempt": {"json": "/attempt"}}},
      {"name": "job", "request": {"method": "POST", "url": "{{base}}/jobs",
                                  "json": {"polls_to_done": 1000}},
       "capture": {"job": {"json": "/id"}}},
      {"name": "never done", "request": {"url": "{{base}}/jobs/{{job}}"},
       "poll": {"every": "50ms", "timeout": "300ms",
                "until": [{"json": "/status", "equals": "done"}]}}]})");
  std::string id = submit_run(d, s, 10, api);
  wait_run_finished(d, id, seconds(30));
  Json in = d.api("GET", "/runs/" + id + "/instances/4").json;
  REQUIRE(in["steps"].size() == 3);
  CHECK(in["steps"][0]["state"] == "passed");
  CHECK(in["steps"][0]["attempts"] == 3);
  CHECK(in["vars"]["attempt"] == 3);
  CHECK(in["steps"][2]["state"] == "failed");
  CHECK_THAT(in["steps"][2]["reason"].get<std::string>(),
             Catch::StartsWith("poll timed out after 300ms"));
  CHECK(in["steps"][2]["attempts"].get<int>() >= 3);
  CHECK(in["state"] == "failed");
  // The capture made it into the poll's URL: the target counted polls on real job ids.
  CHECK(api.stats()["jobs"] == 10);
  CHECK(run_of(d, id)["counts"]["failed"] == 10);
}

TEST_CASE("runs: a resumed poll keeps its deadline from the first attempt") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json s = Json::parse(R"({"name": "deadline", "steps": [
      {"request": {"method": "POST", "url": "{{base}}/jobs", "json": {"polls_to_done": 100000}},
       "capture": {"job": {"json": "/id"}}},
      {"request": {"url": "{{base}}/jobs/{{job}}"},
       "poll": {"every": "100ms", "timeout": "3s",
                "until": [{"json": "/status", "equals": "done"}]}}]})");
  std::string id = submit_run(d, s, 5, api);
  d.wait_until([&] { return api.stats()["polls"].get<int>() >= 50; }, seconds(10),
               "the instances to be polling");
  pid_t victim = d.worker(0)["pid"].get<pid_t>();
  REQUIRE(::kill(victim, SIGKILL) == 0);
  wait_run_finished(d, id, seconds(30));
  Json in = d.api("GET", "/runs/" + id + "/instances/2").json;
  CHECK(in["resumes"] == 1);
  REQUIRE(in["steps"].size() == 2);
  CHECK_THAT(in["steps"][1]["reason"].get<std::string>(), Catch::StartsWith("poll timed out"));
  // Timed out 3 s after the poll first started (about 1 s before the kill), not 3 s after the
  // resume: the whole instance took about 3 s, not 4.
  CHECK(in["duration_ms"].get<int64_t>() >= 3000);
  CHECK(in["duration_ms"].get<int64_t>() < 3800);
  CHECK(in["steps"][1]["duration_ms"].get<int64_t>() >= 3000);
}

TEST_CASE("runs: a worker stopped by a restart hands its instances back with their progress") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  Json s = Json::parse(R"({"name": "handback", "steps": [
      {"request": {"method": "POST", "url": "{{base}}/jobs", "json": {"polls_to_done": 30}},
       "capture": {"job": {"json": "/id"}}},
      {"request": {"url": "{{base}}/jobs/{{job}}"},
       "poll": {"every": "100ms", "timeout": "1m",
                "until": [{"json": "/status", "equals": "done"}]}}]})");
  std::string id = submit_run(d, s, 40, api);
  d.wait_until([&] { return api.stats()["polls"].get<int>() >= 200; }, seconds(10),
               "the instances to be polling");
  auto r = d.api("POST", "/workers/restart", R"({"slot": 0})");
  REQUIRE(r.status == 200);
  wait_run_finished(d, id, seconds(30));
  CHECK(run_of(d, id)["counts"]["passed"] == 40);
  auto all = d.api("GET", "/runs/" + id + "/instances?limit=40&steps=true").json["instances"];
  int handed_back = 0;
  for (const auto& in : all) {
    if (in["resumes"] == 0) continue;
    // Handed back by the stopping worker; or, once slot 0 was back, moved to it to even the
    // loads out (the run was spread over both workers).
    for (const auto& why : in["resume_reasons"]) {
      CHECK((why == "worker_stopped" || why == "rebalanced"));
      handed_back += why == "worker_stopped" ? 1 : 0;
    }
    // The poll carried on from its attempt count: 30 polls in all, not 30 after the move.
    CHECK(in["steps"][1]["attempts"] == 30);
  }
  CHECK(handed_back == 20);
  CHECK(api.stats()["jobs"] == 40);  // no step ran twice: no job was created again
}

// A large run's records are built a slice per loop turn before it exists; runs are still
// created in the order they were submitted, and a small one sent after waits for it.
TEST_CASE("runs: a run sent after a large one is created after it, and both are whole") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  const std::string listen = d.health().at("listen");
  const int port = std::stoi(listen.substr(listen.rfind(':') + 1));
  auto post = [](uint32_t n, bool last) {
    Json body = {{"scenario", {{"name", "nap"}, {"steps", {{{"sleep", "1m"}}}}}},
                 {"instances", n}};
    const std::string text = body.dump();
    return "POST /runs HTTP/1.1\r\nHost: corral\r\nContent-Type: application/json\r\n"
           "Content-Length: " + std::to_string(text.size()) + "\r\n" +
           (last ? "Connection: close\r\n" : "") + "\r\n" + text;
  };
  // Both requests in one write: the daemon reads them in this order. (The exchange returns with
  // the first answer.)
  const std::string answer =
      raw_tcp_exchange("127.0.0.1", port, post(200000, false) + post(1, true), seconds(30));
  INFO(answer);
  CHECK_THAT(answer, Catch::Contains("{\"instances\":200000,\"run\":\"r1-"));
  Json runs;
  d.wait_until([&] { return (runs = d.api("GET", "/runs").json["runs"]).size() == 2; },
               seconds(10), "both runs created");
  // Newest first: the small run came second, although it was built in one turn.
  CHECK(runs[0]["instances"] == 1);
  CHECK(runs[0]["id"].get<std::string>().rfind("r2-", 0) == 0);
  CHECK(runs[1]["instances"] == 200000);
  CHECK(runs[1]["id"].get<std::string>().rfind("r1-", 0) == 0);
  d.wait_until([&] { return run_of(d, runs[1]["id"])["counts"]["running"] == 200000; },
               seconds(30), "every instance of the large run running");
  CHECK(d.api("DELETE", "/runs/" + runs[1]["id"].get<std::string>()).status == 200);
}
