// What a misbehaving API cannot do to corral: bytes that are not UTF-8, redirect loops,
// requests that never end. The real daemon against corral-target's misbehaving routes.
#include <catch2/catch.hpp>

#include <signal.h>

#include <fstream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

// Each slot started once: no worker died.
void check_no_restart(Daemon& d) {
  for (const Json& w : d.workers()) {
    INFO(w.dump());
    CHECK(w["starts"] == 1);
    CHECK(w["restarts"] == 0);
  }
}

Json jobs_scenario() {
  return Json::parse(R"({
    "name": "jobs",
    "steps": [
      {"request": {"method": "POST", "url": "{{base}}/jobs", "json": {"polls_to_done": 2}},
       "expect": [{"status": 201}], "capture": {"job": {"json": "/id"}}},
      {"request": {"url": "{{base}}/jobs/{{job}}"},
       "poll": {"every": "50ms", "timeout": "30s", "until": [{"json": "/status", "equals": "done"}]}}
    ]})");
}

}  // namespace

TEST_CASE(
    "hostile: bytes that are not UTF-8 put into a JSON body end that instance, never a worker") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  Json bad = Json::parse(R"({
    "name": "bytes into json",
    "steps": [
      {"request": {"url": "{{base}}/bytes"}, "capture": {"raw": {"body": true}}},
      {"request": {"method": "POST", "url": "{{base}}/echo", "json": {"x": "{{raw}}"}}}
    ]})");
  std::string bad_id = submit_run(d, bad, 3, api);
  // Another run, submitted at once, must not wait for anything the first one does.
  std::string other_id = submit_run(d, jobs_scenario(), 50, api);
  wait_run_finished(d, bad_id, seconds(20));
  wait_run_finished(d, other_id, seconds(20));

  Json in = d.api("GET", "/runs/" + bad_id + "/instances/0").json;
  CHECK(in["state"] == "errored");
  CHECK(in["resumes"] == 0);
  CHECK(in["reason"] ==
        "request: variable \"raw\" in .x is not UTF-8 text (send bytes with \"body\")");
  CHECK(run_of(d, bad_id)["counts"]["errored"] == 3);
  CHECK(run_of(d, other_id)["counts"]["passed"] == 50);
  // The captured bytes show as text with U+FFFD where a byte is not UTF-8.
  CHECK(in["vars"]["raw"] == "\xef\xbf\xbd\xef\xbf\xbd not UTF-8 \xef\xbf\xbd");
  check_no_restart(d);
}

TEST_CASE("hostile: bytes captured from a body or a header go back out as the same bytes") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json s = Json::parse(R"({
    "name": "bytes round trip",
    "steps": [
      {"request": {"url": "{{base}}/bytes"},
       "capture": {"raw": {"body": true}, "hdr": {"header": "X-Bytes"}}},
      {"request": {"method": "POST", "url": "{{base}}/bytes", "body": "{{raw}}"},
       "expect": [{"status": 200}]},
      {"request": {"method": "POST", "url": "{{base}}/bytes", "body": "{{hdr}}"},
       "expect": [{"status": 200}]}
    ]})");
  std::string id = submit_run(d, s, 5, api);
  wait_run_finished(d, id, seconds(20));
  Json run = run_of(d, id);
  INFO(run.dump());
  CHECK(run["counts"]["passed"] == 5);
  check_no_restart(d);
}

TEST_CASE("hostile: a captured line break cannot add a request header") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  // The echo's JSON body holds "\r\n" inside the method's value once it is captured whole.
  Json s = Json::parse(R"({
    "name": "header injection",
    "steps": [
      {"request": {"method": "POST", "url": "{{base}}/echo", "body": "a\r\nX-Injected: yes"},
       "capture": {"text": {"json": "/body"}}},
      {"request": {"url": "{{base}}/echo", "headers": {"X-Note": "{{text}}"}}}
    ]})");
  std::string id = submit_run(d, s, 1, api);
  wait_run_finished(d, id, seconds(20));
  Json in = d.api("GET", "/runs/" + id + "/instances/0").json;
  CHECK(in["state"] == "errored");
  CHECK(in["reason"] ==
        "request: header X-Note: its value holds a line break or NUL byte (from a variable)");
}

TEST_CASE(
    "hostile: a poll's timeout ends the step at its deadline, even with a request in flight") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json s = Json::parse(R"({
    "name": "never answers",
    "steps": [
      {"request": {"url": "{{base}}/hang"},
       "poll": {"every": "100ms", "timeout": "1500ms", "until": [{"status": 200}]}}
    ]})");
  std::string id = submit_run(d, s, 2, api);
  // The request's own timeout is 30 s: the run ending well before it shows the deadline cut it.
  wait_run_finished(d, id, seconds(15));
  Json in = d.api("GET", "/runs/" + id + "/instances/0").json;
  CHECK(in["state"] == "failed");
  const Json& step = in["steps"][0];
  CHECK_THAT(step["reason"].get<std::string>(),
             Catch::StartsWith("poll timed out after 1500ms (last request in flight 1"));
  CHECK(step["duration_ms"].get<int64_t>() >= 1500);
  CHECK(step["duration_ms"].get<int64_t>() < 5000);
}

TEST_CASE("hostile: a redirect loop is a transport error that says so") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json s = Json::parse(R"({
    "name": "loop",
    "steps": [{"request": {"url": "{{base}}/redirect-loop", "max_redirects": 3}}]})");
  std::string id = submit_run(d, s, 1, api);
  wait_run_finished(d, id, seconds(20));
  Json in = d.api("GET", "/runs/" + id + "/instances/0").json;
  CHECK(in["state"] == "errored");
  CHECK_THAT(in["reason"].get<std::string>(),
             Catch::Contains("too many redirects (3 followed, max_redirects is 3)"));
}

TEST_CASE(
    "hostile: a redirected step records the final URL and its conditions see the last answer") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json s = Json::parse(R"({
    "name": "see other",
    "steps": [{"request": {"method": "POST", "url": "{{base}}/redirect?code=303&to=/echo",
                           "json": {"a": 1}},
               "expect": [{"status": 200}, {"json": "/method", "equals": "GET"},
                          {"json": "/body", "equals": ""}]}]})");
  std::string id = submit_run(d, s, 1, api);
  wait_run_finished(d, id, seconds(20));
  Json in = d.api("GET", "/runs/" + id + "/instances/0").json;
  INFO(in.dump());
  CHECK(in["state"] == "passed");
  CHECK(in["steps"][0]["url"] == api.base() + "/echo");
}

TEST_CASE("hostile: exceptions thrown in a worker's timer and IPC read callbacks are caught") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1).with_env("CORRAL_TEST_FAULT", "throw"));
  d.wait_ready(1);
  const std::string log = home.file("logs/worker-0.log");
  wait_for(
      [&] {
        std::string text = read_file(log);
        return text.find("test fault: thrown from a timer callback") != std::string::npos &&
               text.find("test fault: thrown from the IPC read callback") != std::string::npos;
      },
      seconds(10), "both test exceptions in the worker's log", [&] { return tail_file(log, 20); });
  CHECK_THAT(read_file(log), Catch::Contains("exception in a timer callback"));
  CHECK_THAT(read_file(log), Catch::Contains("exception in a stream read callback"));
  // The worker goes on working, and was never replaced.
  std::string id = submit_run(d, jobs_scenario(), 20, api);
  wait_run_finished(d, id, seconds(20));
  CHECK(run_of(d, id)["counts"]["passed"] == 20);
  check_no_restart(d);
}
