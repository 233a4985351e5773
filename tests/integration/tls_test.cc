// https:// through the real binary, against nginx with a certificate the test makes
// (tests/support/harness_nginx.h): scenarios at scale over TLS without a worker's loop ever
// starving its heartbeat, TLS options from a scenario, and TLS failures in a step's record.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/support/harness.h"
#include "tests/support/harness_nginx.h"
#include "tests/support/harness_runs.h"
#include "tests/support/test_pki.h"

namespace corral::test {
namespace {

Json poll_scenario(const std::string& url, int attempts, const Json& request_extra = {}) {
  Json request = {{"url", url}};
  if (request_extra.is_object()) request.update(request_extra);
  return {{"name", "tls-poll"},
          {"steps",
           {{{"name", "poll status"},
             {"request", request},
             {"poll",
              {{"every", "5s"},
               {"max_attempts", attempts},
               {"timeout", "2m"},
               {"until", {{{"json", "/status"}, {"equals", "Y"}}}}}}}}}};
}

TEST_CASE("tls: 100,000 instances polling an https URL every 5 s run with no worker restart") {
  Nginx nginx;
  TempHome home;
  // HTTP/1.1 over TLS: 256 connections per worker, each with its handshake, the hardest case
  // for a worker's loop (HTTP/2 carries the same polls on a few connections).
  Json config = {{"tls", {{"ca_file", test_pki().ca}}}, {"http_version", "1.1"}};
  Daemon d(home, DaemonOptions().with_workers(2).with_config(config));
  d.wait_ready(2);
  const int n = 100000;
  const std::string id =
      post_run(d, poll_scenario(nginx.https_base() + "/status/{{instance}}", 3), n);
  Json run;
  wait_for(
      [&] {
        run = d.api("GET", "/runs/" + id).json;
        Json workers = d.workers();
        for (const Json& w : workers) REQUIRE(w.at("restarts") == 0);  // never, at any moment
        return run.value("state", "") == "finished";
      },
      seconds(150), "the run to finish", [&] { return run.dump(); });
  // Every instance made its 3 attempts over TLS and failed as the scenario says (the status
  // never becomes "Y"), none for a transport error.
  CHECK(count_in(run, "failed") == n);
  Json failures = run.at("failures");
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].at("reason") ==
        "until not met after 3 attempts: /status was \"N\", expected \"Y\"");
  CHECK(nginx.requests() >= static_cast<uint64_t>(3 * n));
  for (const Json& w : d.workers()) {
    CHECK(w.at("restarts") == 0);
    CHECK(w.at("starts") == 1);
  }
}

// Waits for run `id` to finish; its GET /runs/<id>.
Json finished_run(Daemon& d, const std::string& id) {
  Json run;
  wait_for(
      [&] { return (run = d.api("GET", "/runs/" + id).json).value("state", "") == "finished"; },
      seconds(30), "the run to finish");
  return run;
}

std::string write_scenario(const TempHome& home, const std::string& name, const Json& doc) {
  std::ofstream(home.file(name)) << doc.dump();
  return home.file(name);
}

TEST_CASE("tls: a scenario's tls options reach the workers, and a TLS failure ends the step") {
  Nginx nginx;
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));  // no ca_file: the system's store
  d.wait_ready(1);
  const std::string url = nginx.https_base() + "/status/{{instance}}";
  SECTION("the system's store does not know the test CA") {
    const std::string id = post_run(d, poll_scenario(url, 1), 2);
    Json run = finished_run(d, id);
    CHECK(count_in(run, "errored") + count_in(run, "failed") == 2);
    Json step = d.api("GET", "/runs/" + id + "/instances/0").json.at("steps").at(0);
    CHECK(step.at("reason").get<std::string>().find(
              "certificate verify failed: unable to get local issuer certificate (" +
              nginx.https_base() + ")") != std::string::npos);
  }
  SECTION("the scenario's ca_file trusts it, and http_version says which protocol") {
    Json scenario = poll_scenario(url, 1, {{"http_version", "2"}});
    scenario["tls"] = {{"ca_file", test_pki().ca}};
    const std::string id = post_run(d, scenario, 2);
    Json run = finished_run(d, id);
    INFO(run.dump());
    CHECK(count_in(run, "failed") == 2);  // each polled once over TLS, and the status was "N"
    // The step's record says how long its request waited for the TLS handshake.
    Json step = d.api("GET", "/runs/" + id + "/instances/0").json.at("steps").at(0);
    CHECK(step.value("tls_ms", 0.0) > 0);
  }
  SECTION("verify false reaches a server no store trusts, and the master says so once") {
    Json scenario = poll_scenario(url, 1);
    scenario["tls"] = {{"verify", false}};
    const std::string id = post_run(d, scenario, 2);
    Json run = finished_run(d, id);
    INFO(run.dump());
    CHECK(count_in(run, "failed") == 2);  // polled over TLS; the status was "N", not an error
    const std::string warning = "run " + id +
                                ": tls.verify is false for step \"poll status\": the server's "
                                "certificate is not checked";
    const std::string log = read_file(home.master_log());
    CHECK(log.find(warning) != std::string::npos);
    CHECK(log.find(warning) == log.rfind(warning));

    const std::string file = write_scenario(home, "unverified.json", scenario);
    CliResult r =
        run_cli({"load", file, "--vus", "1", "--duration", "1s"}, home.path(), {}, seconds(60));
    INFO(r.describe());
    CHECK(r.exit_code == 0);
    wait_for(
        [&] {
          return read_file(home.master_log())
                     .find(": tls.verify is false for step \"poll status\"", log.size()) !=
                 std::string::npos;
        },
        seconds(10), "the load test's warning");
    CHECK_THAT(read_file(home.master_log()).substr(log.size()), Catch::Contains("load "));
  }
  SECTION("a client key readable by others is refused at submission") {
    std::string key = home.file("open.key");
    std::filesystem::copy_file(test_pki().client.key, key);
    std::filesystem::permissions(key, std::filesystem::perms(0644));
    Json scenario = poll_scenario(url, 1);
    scenario["tls"] = {{"client_cert", test_pki().client.cert}, {"client_key", key}};
    ApiResponse r = d.api("POST", "/runs", Json{{"scenario", scenario}, {"instances", 1}}.dump());
    CHECK(r.status == 400);
    CHECK(r.json.value("error", "") ==
          "scenario.tls.client_key " + key +
              ": mode 0644 lets its group or others read it; make it 0600 (chmod 600)");
  }
}

TEST_CASE("tls: a load test over https says which protocol answered and what the handshakes cost") {
  Nginx nginx;
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(2).with_config(
                     {{"tls", {{"ca_file", test_pki().ca}}}, {"load_connections_per_worker", 20}}));
  d.wait_ready(2);
  Json scenario = {{"name", "tls get"},
                   {"steps",
                    {{{"name", "get"},
                      {"request", {{"url", nginx.https_base() + "/x"}}},
                      {"expect", {{"status", 200}}}}}}};
  struct Case {
    const char* name;
    std::vector<std::string> args;
    const char* protocol;
  };
  const Case cases[] = {
      {"closed model: HTTP/2 by ALPN", {"--vus", "10", "--duration", "2s"}, "HTTP/2"},
      {"held connections: one pinned TLS connection per VU, HTTP/1.1",
       {"--connections", "10", "--pace", "100ms", "--duration", "2s"},
       "HTTP/1.1"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      const std::string file = write_scenario(home, "tls-load.json", scenario);
      const std::string out = home.file("out.json");
      std::vector<std::string> args = {"load", file, "--out", out};
      args.insert(args.end(), c.args.begin(), c.args.end());
      CliResult r = run_cli(args, home.path(), {}, seconds(60));
      INFO(r.describe());
      REQUIRE(r.exit_code == 0);
      CHECK_THAT(r.out, Catch::Contains(std::string("protocol   : ") + c.protocol + "\n"));
      CHECK_THAT(r.out, Catch::Contains("tls        : "));
      Json j = Json::parse(std::ifstream(out), nullptr, false);
      REQUIRE(j.is_object());
      CHECK(j["errors"]["count"] == 0);
      CHECK(j["protocols"][c.protocol] == j["requests"]);
      const uint64_t handshakes = j["tls"]["handshakes"];
      if (std::string(c.protocol) == "HTTP/2") {
        // A connection per worker, and a new one each time nginx ends a connection after its
        // keepalive_requests (1,000) with GOAWAY: resumed, and far fewer than the requests.
        CHECK(handshakes >= 2);
        CHECK(handshakes * 100 <= j["requests"].get<uint64_t>());
      } else {
        CHECK(handshakes == 10);  // one held connection per VU
      }
      CHECK(j["tls"]["full"].get<uint64_t>() + j["tls"]["resumed"].get<uint64_t>() == handshakes);
      CHECK(j["tls"]["handshake"]["p50"].get<double>() > 0);
    }
  }
}

}  // namespace
}  // namespace corral::test
