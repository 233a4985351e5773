// Who may use the control API: the unix socket's owner, and over TCP whoever has the token.
#include <catch2/catch.hpp>

#include <fstream>

#include "tests/support/harness.h"

using namespace corral::test;

namespace {

const std::string kToken = "it-token-5b1f";

// A raw request over TCP with the given Authorization header (none when empty).
std::string tcp_request(int port, const std::string& method, const std::string& path,
                        const std::string& authorization) {
  std::string raw = method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  if (!authorization.empty()) raw += "Authorization: " + authorization + "\r\n";
  raw += "Content-Length: 0\r\n\r\n";
  return raw_tcp_exchange("127.0.0.1", port, raw);
}

}  // namespace

TEST_CASE("auth: a TCP listener off loopback does not start without a token") {
  TempHome home;
  CliResult r = run_cli({"daemon", "--listen", "0.0.0.0:0"}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 78);  // a configuration error (EX_CONFIG)
  CHECK_THAT(r.err, Catch::Contains("listen: 0.0.0.0:0 is not a loopback address: set api_token"));
  CHECK(read_file(home.file("corral.pid")).empty());
}

TEST_CASE("auth: with a token, TCP requests need it, the unix socket and the probes do not") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"api_token", kToken}}));
  d.wait_ready(1);
  int port = tcp_port(d);

  // Without the token, or with a wrong one, every route answers the same 401: an existing
  // route and a made-up one cannot be told apart.
  for (const std::string& auth : std::vector<std::string>{
           "", "Bearer wrong", "Bearer " + kToken + "x", "Basic " + kToken, "Bearer"}) {
    for (const char* path : {"/workers", "/runs", "/schedules", "/no/such/route"}) {
      std::string answer = tcp_request(port, "GET", path, auth);
      INFO(auth << " " << path << ": " << answer);
      CHECK(answer.rfind("HTTP/1.1 401", 0) == 0);
      CHECK_THAT(answer, Catch::Contains("WWW-Authenticate: Bearer"));
      CHECK_THAT(answer, Catch::EndsWith("{\"error\":\"missing or wrong API token\"}"));
    }
  }
  CHECK(tcp_request(port, "POST", "/shutdown", "").rfind("HTTP/1.1 401", 0) == 0);
  CHECK(d.running());

  // With it, the API answers; the scheme name is case-insensitive.
  CHECK(tcp_request(port, "GET", "/workers", "Bearer " + kToken).rfind("HTTP/1.1 200", 0) == 0);
  CHECK(tcp_request(port, "GET", "/workers", "bearer " + kToken).rfind("HTTP/1.1 200", 0) == 0);
  CHECK(tcp_request(port, "GET", "/no/such/route", "Bearer " + kToken).rfind("HTTP/1.1 404", 0) ==
        0);
  // The probes stay open; the unix socket needs no token.
  CHECK(tcp_request(port, "GET", "/health", "").rfind("HTTP/1.1 200", 0) == 0);
  CHECK(tcp_request(port, "GET", "/latency", "").rfind("HTTP/1.1 200", 0) == 0);
  CHECK(d.api("GET", "/workers").status == 200);
}

TEST_CASE("auth: the CLI talks TCP to $CORRAL_API with $CORRAL_API_TOKEN") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1).with_config({{"api_token", kToken}}));
  d.wait_ready(1);
  std::string api = "127.0.0.1:" + std::to_string(tcp_port(d));
  TempHome elsewhere;  // no daemon here: the CLI must not fall back to a socket

  CliResult ok =
      run_cli({"status"}, elsewhere.path(), {{"CORRAL_API", api}, {"CORRAL_API_TOKEN", kToken}});
  INFO(ok.describe());
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("ready"));

  CliResult schedules = run_cli({"schedule", "ls", "--json"}, elsewhere.path(),
                                {{"CORRAL_API", api}, {"CORRAL_API_TOKEN", kToken}});
  INFO(schedules.describe());
  CHECK(schedules.exit_code == 0);
  CHECK_THAT(schedules.out, Catch::Contains("\"schedules\": []"));

  Json scenario = {{"name", "tcp"}, {"steps", {{{"sleep", "0s"}}}}};
  std::ofstream(elsewhere.file("s.json")) << scenario.dump();
  CliResult run = run_cli({"run", elsewhere.file("s.json"), "-n", "3"}, elsewhere.path(),
                          {{"CORRAL_API", api}, {"CORRAL_API_TOKEN", kToken}});
  INFO(run.describe());
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::Contains("  passed     : 3"));

  // A load test is submitted and followed over TCP too (its target: the daemon's /health).
  Json load = {{"name", "tcp load"},
               {"steps", {{{"request", {{"url", "http://" + api + "/health"}}}}}},
               {"load", {{"vus", 1}, {"duration", "1s"}, {"pace", "100ms"}}}};
  std::ofstream(elsewhere.file("l.json")) << load.dump();
  CliResult loaded = run_cli({"load", elsewhere.file("l.json")}, elsewhere.path(),
                             {{"CORRAL_API", api}, {"CORRAL_API_TOKEN", kToken}});
  INFO(loaded.describe());
  CHECK(loaded.exit_code == 0);
  CHECK_THAT(loaded.out, Catch::Contains("state      : passed"));

  CliResult refused = run_cli({"status"}, elsewhere.path(), {{"CORRAL_API", api}});
  INFO(refused.describe());
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains("missing or wrong API token"));
}

TEST_CASE("auth: a daemon on every address starts when it has a token") {
  TempHome home;
  const std::string h = home.path();
  CliResult start = run_cli({"start", "--home", h, "--listen", "0.0.0.0:0", "--workers", "1"}, h,
                            {{"CORRAL_API_TOKEN", kToken}});
  std::unique_ptr<Daemon> daemon;
  if (!read_file(home.file("corral.pid")).empty()) daemon = Daemon::adopt(home);
  INFO(start.describe());
  REQUIRE(start.exit_code == 0);
  REQUIRE(daemon != nullptr);
  Json health = daemon->health();
  CHECK_THAT(health["listen"].get<std::string>(), Catch::StartsWith("0.0.0.0:"));
  CHECK(run_cli({"stop", "--home", h}, h).exit_code == 0);
  daemon->wait_exit(seconds(20));
}
