// Load tests spread over the hosts of a cluster (`corral load --hosts N|all`): every host runs
// its share of the VUs or of the rate, and the origin adds up their seconds into one test.
// Stopping the test on its origin stops every share; a host that dies during the test is left
// out of it, and the test says so; when the origin dies, another host takes the test over.
#include <catch2/catch.hpp>

#include <signal.h>

#include <fstream>
#include <future>

#include "tests/support/harness_cluster.h"

using namespace corral::test;

namespace {

Json get_scenario(const std::string& base, const Json& load) {
  return {{"name", "one get"},
          {"vars", {{"base", base}}},
          {"steps", Json::array({{{"name", "get"}, {"request", {{"url", "{{base}}/delay?ms=1"}}}}})},
          {"load", load}};
}

// The test `id` as host `d` sees it (a share, or the whole test on its origin); null if unknown.
Json load_on(Daemon& d, const std::string& id) {
  auto r = d.try_api("GET", "/loads/" + id);
  return r && r->status == 200 ? r->json : Json();
}

}  // namespace

TEST_CASE("cluster load: a test over all hosts runs a share on each, and its origin adds them up") {
  Trio t;
  const std::string file = t.homes[0].file("open.json");
  // 300 arrivals a second for 3 s: 100 a second on each host.
  std::ofstream(file) << get_scenario(t.api.base(), {{"rate", 300},
                                                      {"duration", "3s"},
                                                      {"max_vus", 50},
                                                      {"thresholds", {{"dropped", {"count < 1"}}}}})
                             .dump();
  const std::string out = t.homes[0].file("out.json");
  CliResult r = run_cli({"load", file, "--hosts", "all", "--out", out}, t.homes[0].path(), {},
                        seconds(90));
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("on 1 worker here and 2 other hosts\n") &&
                        Catch::Contains("hosts      : 3 (this one the origin); "));
  Json j = Json::parse(std::ifstream(out), nullptr, false);
  REQUIRE(j.is_object());
  INFO(j.dump());
  CHECK(j["state"] == "passed");
  CHECK(j["reason"] == "");
  CHECK(j["cluster"]["hosts"] == 3);
  CHECK(j["cluster"]["share"] == 0);
  CHECK(j["cluster"]["origin"].is_null());
  REQUIRE(j["cluster"]["others"].size() == 2);
  for (const Json& other : j["cluster"]["others"]) CHECK(other["state"] == "done");
  // Every arrival of every host is in the origin's totals, and reached the target once.
  CHECK(j["iterations"]["passed"] == 900);
  CHECK(j["requests"] == 900);
  CHECK(t.api.stats()["requests"] == 900);
  CHECK(j["latency"]["count"] == 900);
  CHECK(j["series"].size() >= 3);
  // Each other host ran a third of the arrivals, as a share of the origin's test.
  const std::string id = j["id"];
  for (size_t i = 1; i < 3; ++i) {
    Json share = load_on(*t.d[i], id);
    INFO(share.dump());
    CHECK(share["requests"] == 300);
    CHECK(share["cluster"]["origin"] == t.ids[0]);
    CHECK(share["cluster"]["share"].get<int>() >= 1);
  }
  // The origin's rows are gone once the test ended.
  t.d[0]->wait_until([&] { return t.db.sql("SELECT COUNT(*) FROM loads") == "0"; }, seconds(10),
                     "the test's rows to be deleted");
  CHECK(t.db.sql("SELECT COUNT(*) FROM load_seconds") == "0");
}

TEST_CASE("cluster load: stopping on the origin stops every share, and a host that dies is left out") {
  Trio t;
  Json body = {{"scenario", get_scenario(t.api.base(), nullptr)},
               {"load", {{"vus", 6}, {"duration", "60s"}, {"pace", "100ms"}, {"hosts", 5}}}};
  body["scenario"].erase("load");
  auto refused = t.d[0]->api("POST", "/loads", body.dump());
  CHECK(refused.status == 503);
  CHECK_THAT(refused.json.value("error", ""),
             Catch::Contains("load.hosts: the test asks for 5 hosts and 3 are alive"));

  body["load"]["hosts"] = 3;
  auto started = t.d[0]->api("POST", "/loads", body.dump());
  REQUIRE(started.status == 201);
  CHECK(started.json["hosts"].size() == 3);
  const std::string id = started.json["load"];
  for (size_t i = 1; i < 3; ++i) {
    t.d[i]->wait_until(
        [&] {
          Json share = load_on(*t.d[i], id);
          return share.is_object() && share["requests"].get<uint64_t>() > 0;
        },
        seconds(20), "the host to run its share");
  }
  t.d[0]->wait_until([&] { return load_on(*t.d[0], id)["vus"] == 6; }, seconds(20),
                     "the origin to count the VUs of every host");

  t.d[2]->signal(SIGKILL);
  t.d[2]->wait_exit(seconds(10));
  t.d[0]->wait_until(
      [&] {
        Json j = load_on(*t.d[0], id);
        return j["reason"].get<std::string>().find("host " + t.ids[2] + " left during the test") !=
               std::string::npos;
      },
      seconds(20), "the origin to leave the dead host out");
  CHECK(load_on(*t.d[0], id)["state"] == "running");

  auto stopped = t.d[0]->api("DELETE", "/loads/" + id);
  CHECK(stopped.status == 200);
  t.d[0]->wait_until([&] { return load_on(*t.d[0], id)["state"] == "stopped"; }, seconds(20),
                     "the test to end once every host's share ended");
  Json share = load_on(*t.d[1], id);
  INFO(share.dump());
  CHECK(share["state"] == "stopped");
  CHECK_THAT(share["reason"].get<std::string>(), Catch::Contains("stopped on its origin host"));
  Json j = load_on(*t.d[0], id);
  INFO(j.dump());
  // The origin's totals hold the surviving host's share.
  CHECK(j["requests"].get<uint64_t>() >= share["requests"].get<uint64_t>());
  CHECK(j["elapsed_s"].get<double>() < 50);
}

TEST_CASE(
    "cluster load: when the origin dies, a host running a share takes the test over, and corral "
    "load follows it") {
  Trio t;
  const std::string file = t.homes[0].file("paced.json");
  std::ofstream(file) << get_scenario(t.api.base(), {{"vus", 6},
                                                     {"duration", "16s"},
                                                     {"pace", "100ms"},
                                                     {"thresholds", {{"errors", {"rate < 0.05"}}}}})
                             .dump();
  const std::string out = t.homes[0].file("out.json");
  auto cli = std::async(std::launch::async, [&] {
    return run_cli({"load", file, "--hosts", "all", "--out", out}, t.homes[0].path(), {},
                   seconds(90));
  });
  std::string id;
  t.d[0]->wait_until(
      [&] {
        id = t.db.sql("SELECT COALESCE(MIN(id), '') FROM loads");
        return !id.empty() && load_on(*t.d[0], id)["vus"] == 6;
      },
      seconds(20), "the origin to count the VUs of every host");
  const std::string origin_rows =
      "SELECT COUNT(*) FROM load_seconds WHERE host = '" + t.ids[0] + "'";
  t.d[0]->wait_until([&] { return std::stoi(t.db.sql(origin_rows)) >= 2; }, seconds(20),
                     "the origin to send two seconds of its own workers");
  t.d[0]->signal(SIGKILL);
  t.d[0]->wait_exit(seconds(10));
  // One of the others claims it once the origin is declared dead; the third follows it.
  size_t heir = 0;
  t.d[1]->wait_until(
      [&] {
        for (size_t i = 1; i < 3; ++i) {
          Json j = load_on(*t.d[i], id);
          if (j.is_object() && j["cluster"]["origin"].is_null()) heir = i;
        }
        return heir != 0;
      },
      seconds(30), "a host to take the test over");
  const size_t other = heir == 1 ? 2 : 1;
  t.d[other]->wait_until(
      [&] { return load_on(*t.d[other], id)["cluster"]["origin"] == t.ids[heir]; }, seconds(10),
      "the third host to see the new origin");
  CHECK(load_on(*t.d[other], id)["state"] == "running");
  t.d[heir]->wait_until([&] { return load_on(*t.d[heir], id)["state"] != "running"; }, seconds(40),
                        "the test to end on its new origin");
  auto full = t.d[heir]->api("GET", "/loads/" + id + "?series=1");
  REQUIRE(full.status == 200);
  Json j = full.json;
  INFO(j.dump());
  CHECK(j["state"] == "passed");
  CHECK_THAT(
      j["reason"].get<std::string>(),
      Catch::Contains("host " + t.ids[0] + ", the test's origin, left during the test; host " +
                      t.ids[heir] + " took the test over"));
  bool told = false;
  for (const Json& e : j["events"]) told = told || e["kind"] == "origin";
  CHECK(told);
  // Every second of the test is there, each with the load of the hosts taking part then.
  CHECK(j["series"].size() >= 15);
  for (const Json& s : j["series"]) {
    INFO(s.dump());
    CHECK(s["rps"].get<uint64_t>() > 0);
  }
  // Every request the target saw is in the totals, but those the dead origin measured in its
  // last second or two, which it never sent: at most 2 VUs x 10 a second x 3 s.
  const uint64_t served = t.api.stats()["requests"];
  const uint64_t counted = j["requests"];
  CHECK(counted <= served);
  CHECK(served - counted <= 60);
  Json share = load_on(*t.d[other], id);
  CHECK(share["state"] == "passed");
  // The heir's share, the other's, and the origin's two seconds or more (2 VUs x 10 a second).
  CHECK(counted > share["requests"].get<uint64_t>() * 2 + 10);
  t.d[heir]->wait_until([&] { return t.db.sql("SELECT COUNT(*) FROM loads") == "0"; }, seconds(10),
                        "the test's rows to be deleted once it ended");
  CHECK(t.db.sql("SELECT COUNT(*) FROM load_seconds") == "0");
  // The CLI, started on the origin, followed the test to its heir, and summed it up from there.
  CliResult r = cli.get();
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  const std::string heir_at = t.d[heir]->health()["listen"];
  CHECK_THAT(r.err, Catch::Contains("load " + id + ": " + t.homes[0].path() +
                                    "/corral.sock does not answer") &&
                        Catch::Contains("waiting for another host to take the test over") &&
                        Catch::Contains("following it on " + heir_at + ", its origin now"));
  Json kept = Json::parse(std::ifstream(out), nullptr, false);
  REQUIRE(kept.is_object());
  CHECK(kept["state"] == "passed");
  CHECK(kept["requests"] == counted);
}

TEST_CASE("cluster load: a daemon in no cluster refuses a test over hosts") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Json body = {{"scenario", get_scenario(api.base(), nullptr)},
               {"load", {{"vus", 1}, {"duration", "1s"}, {"hosts", "all"}}}};
  body["scenario"].erase("load");
  auto r = d.api("POST", "/loads", body.dump());
  CHECK(r.status == 400);
  CHECK_THAT(r.json.value("error", ""), Catch::Contains("load.hosts: this daemon is in no cluster"));
}
