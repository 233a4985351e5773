// Callback steps through the real daemon: corral-target calls the URL a request handed it;
// the route answers without the API token and says what became of a call (404, 409, 410); and
// a call answered 202 is never lost, whether a worker is killed with SIGKILL or the master is.
#include <catch2/catch.hpp>

#include <signal.h>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

// Step 0 prints the instance's callback URL (captured as "url"); step 1 sleeps `sleep`; step 2
// waits for the call and captures its "status".
Json wait_for_call(const std::string& sleep) {
  return {{"name", "called"},
          {"steps",
           {{{"exec", {{"argv", {"echo", "-n", "{{callback_url}}"}}}},
             {"capture", {{"url", {{"body", true}}}}}},
            {{"sleep", sleep}},
            {{"name", "call"},
             {"callback", {{"timeout", "2m"}}},
             {"capture", {{"status", {{"json", "/status"}}}}}}}}};
}

// Waits until every instance finished step 0, and returns the path of each one's callback URL
// ("/callbacks/<token>"), by index.
std::vector<std::string> callback_paths(Daemon& d, const std::string& id, int n) {
  std::vector<std::string> paths;
  d.wait_until(
      [&] {
        paths.clear();
        Json all = d.api("GET", "/runs/" + id + "/instances?steps=true&limit=" + std::to_string(n)).json;
        for (const Json& in : all["instances"]) {
          if (in["step"].get<int>() < 1) return false;
          std::string url = in["vars"]["url"];
          paths.push_back(url.substr(url.find("/callbacks/")));
        }
        return paths.size() == static_cast<size_t>(n);
      },
      seconds(30), "every instance of " + id + " to hand out its callback URL");
  return paths;
}

int call(Daemon& d, const std::string& path, const std::string& body) {
  auto r = try_tcp_request("127.0.0.1", tcp_port(d), "POST", path, body);
  return r ? r->status : 0;
}

Json submit(Daemon& d, const Json& scenario, int n) {
  ApiResponse r = d.api("POST", "/runs", Json{{"scenario", scenario}, {"instances", n}}.dump());
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json;
}

// Every instance passed with its three steps once each, and captured what its call said.
void check_all_called(Daemon& d, const std::string& id, int n) {
  wait_run_finished(d, id, seconds(90));
  CHECK(run_of(d, id)["counts"]["passed"] == n);
  Json all = instances_of(d, id, n);
  REQUIRE(all.size() == static_cast<size_t>(n));
  for (const Json& in : all) {
    INFO("instance " << in["i"] << ": " << in.dump());
    CHECK(history_problem(in, 3) == "");
    CHECK(in["vars"]["status"] == "called " + std::to_string(in["i"].get<int>()));
  }
}

}  // namespace

TEST_CASE("callback: corral-target calls the URL a request handed it, and each instance passes") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  Json scenario = Json::parse(read_file(std::string(CORRAL_EXAMPLES_DIR) + "/callback.json"));
  std::string id = submit_run(d, scenario, 40, api);
  wait_run_finished(d, id, seconds(60));
  CHECK(run_of(d, id)["counts"]["passed"] == 40);
  Json all = instances_of(d, id, 40);
  for (const Json& in : all) {
    INFO("instance " << in["i"] << ": " << in.dump());
    CHECK(history_problem(in, 3) == "");
    CHECK(in["vars"]["called_for"] == in["vars"]["job"]);
  }
  CHECK(api.stats()["callbacks"] == 40);
}

TEST_CASE("callback: the route needs no API token and answers 404, 400, 409 and 410 as it says") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"api_token", "s3cret"}}));
  d.wait_ready(1);
  std::string id = submit(d, wait_for_call("2s"), 1)["run"];
  std::string path = callback_paths(d, id, 1)[0];
  CHECK(call(d, path.substr(0, path.size() - 1) + (path.back() == '0' ? "1" : "0"), "{}") == 404);
  CHECK(call(d, "/callbacks/nothing", "{}") == 404);
  CHECK(call(d, path, "{not json") == 400);
  CHECK(call(d, path, R"({"status": "called 0"})") == 202);  // early: the instance sleeps
  CHECK(call(d, path, R"({"status": "again"})") == 409);
  Json waiting = d.api("GET", "/runs/" + id + "/instances/0").json;
  INFO(waiting.dump());
  CHECK(waiting["callback"] == Json{{"step", 2}, {"called", true}});  // held for the step
  check_all_called(d, id, 1);
  CHECK_FALSE(d.api("GET", "/runs/" + id + "/instances/0").json.contains("callback"));
  CHECK(call(d, path, R"({"status": "late"})") == 410);
  // Any other route still needs the token on TCP.
  auto runs = try_tcp_request("127.0.0.1", tcp_port(d), "GET", "/runs");
  REQUIRE(runs);
  CHECK(runs->status == 401);
}

TEST_CASE("callback: calls answered 202 survive a worker killed with SIGKILL") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  const int n = 20;
  std::string id = submit(d, wait_for_call("1s"), n)["run"];
  std::vector<std::string> paths = callback_paths(d, id, n);
  // Half are called while they sleep, before the kill; the rest wait at the step through it.
  for (int i = 0; i < n / 2; ++i) {
    CHECK(call(d, paths[i], Json{{"status", "called " + std::to_string(i)}}.dump()) == 202);
  }
  const pid_t victim = d.worker(0).at("pid");
  REQUIRE(::kill(victim, SIGKILL) == 0);
  d.wait_until([&] { return d.worker(0).at("pid") != victim && d.worker(0).at("state") == "ready"; },
               seconds(10), "slot 0 to be replaced");
  for (int i = n / 2; i < n; ++i) {
    int status = 0;
    d.wait_until(
        [&] {
          status = call(d, paths[i], Json{{"status", "called " + std::to_string(i)}}.dump());
          return status == 202 || status == 409;
        },
        seconds(10), "the call of instance " + std::to_string(i) + " to be taken");
  }
  check_all_called(d, id, n);
  // The killed worker held some of them, called and not: they resumed elsewhere.
  int resumed = 0;
  for (const Json& in : instances_of(d, id, n)) resumed += in["resume_reasons"].empty() ? 0 : 1;
  CHECK(resumed > 0);
}

TEST_CASE("callback: calls answered 202 before the master is killed are used after its restart") {
  TempHome home;
  auto opts = DaemonOptions().with_workers(2);
  auto d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(2);
  const int n = 20;
  std::string id = submit(*d, wait_for_call("3s"), n)["run"];
  std::vector<std::string> paths = callback_paths(*d, id, n);
  for (int i = 0; i < n; ++i) {
    CHECK(call(*d, paths[i], Json{{"status", "called " + std::to_string(i)}}.dump()) == 202);
  }
  d->signal(SIGKILL);  // while every instance still sleeps: none has used its call yet
  d->wait_exit(seconds(10));
  d = std::make_unique<Daemon>(home, opts);
  check_all_called(*d, id, n);
  CHECK(count_resume_reason(instances_of(*d, id, n), "master_restart") == n);
  // The restarted master still knows the key: a used token is ended, not unknown.
  CHECK(call(*d, paths[0], "{}") == 410);
}
