// The HTTP clients as the daemon runs them: which one serves http://, and their connection
// errors in /metrics, per worker slot and origin.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

// A port on 127.0.0.1 that nothing listens on: bound, then closed.
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("http metrics: refused connections are counted per origin in /metrics") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  std::string origin = "http://127.0.0.1:" + std::to_string(closed_port());
  Json s = Json::parse(R"({"name": "refused", "steps": [{"request": {"url": ")" + origin +
                       R"(/x"}}]})");
  std::string id = submit_run(d, s, 3, api);
  wait_run_finished(d, id, seconds(20));
  Json in = d.api("GET", "/runs/" + id + "/instances/0").json;
  CHECK(in["state"] == "errored");
  CHECK_THAT(in["reason"].get<std::string>(), Catch::Contains("connection refused"));
  std::string line = "corral_http_connection_errors_total{kind=\"connect\",origin=\"" + origin +
                     "\",slot=\"0\"} 3";
  std::string metrics;
  // Counts travel with the worker's heartbeat (every second).
  d.wait_until(
      [&] {
        metrics = d.api("GET", "/metrics").body;
        return metrics.find(line) != std::string::npos;
      },
      seconds(10), line);
  CHECK_THAT(metrics, Catch::Contains("kind=\"reset\",origin=\"" + origin + "\",slot=\"0\"} 0"));
}

// Which client serves http:// follows the config: the lean client asks for gzip and deflate
// only; libcurl (Debian's) also offers br and zstd.
TEST_CASE("http client: http_client picks the client that serves http:// URLs") {
  for (const char* client : {"lean", "curl"}) {
    DYNAMIC_SECTION(client) {
      TempHome home;
      JobApi api;
      Daemon d(home, DaemonOptions().with_workers(1).with_config({{"http_client", client}}));
      d.wait_ready(1);
      Json s = Json::parse(R"({"name": "which client", "steps": [
        {"request": {"url": "{{base}}/echo"},
         "capture": {"enc": {"json": "/headers/accept-encoding"}}}]})");
      std::string id = submit_run(d, s, 1, api);
      wait_run_finished(d, id, seconds(20));
      Json in = d.api("GET", "/runs/" + id + "/instances/0").json;
      INFO(in.dump());
      REQUIRE(in["state"] == "passed");
      std::string enc = in["vars"]["enc"].get<std::string>();
      if (std::string(client) == "lean") {
        CHECK(enc == "gzip, deflate");
      } else {
        CHECK(enc != "gzip, deflate");
        CHECK_THAT(enc, Catch::Contains("gzip"));
      }
    }
  }
}
