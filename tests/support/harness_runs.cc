#include "tests/support/harness_runs.h"

#include <catch2/catch.hpp>

namespace corral::test {

std::string submit_run(Daemon& d, const Json& scenario, int instances, const JobApi& api) {
  Json body = {{"scenario", scenario}, {"instances", instances}, {"vars", {{"base", api.base()}}}};
  auto r = d.api("POST", "/runs", body.dump());
  INFO(r.body);
  REQUIRE(r.status == 201);
  REQUIRE(r.json["instances"] == instances);
  return r.json["run"];
}

Json run_of(Daemon& d, const std::string& id) { return d.api("GET", "/runs/" + id).json; }

void wait_run_finished(Daemon& d, const std::string& id, milliseconds timeout) {
  d.wait_until([&] { return run_of(d, id)["state"] == "finished"; }, timeout,
               "run " + id + " to finish");
}

}  // namespace corral::test
