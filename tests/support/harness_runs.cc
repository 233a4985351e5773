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

std::string post_run(Daemon& d, const Json& scenario, int instances) {
  auto r = d.api("POST", "/runs", Json{{"scenario", scenario}, {"instances", instances}}.dump());
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json.at("run");
}

Json run_of(Daemon& d, const std::string& id) { return d.api("GET", "/runs/" + id).json; }

int count_in(const Json& run, const std::string& state) {
  return run.at("counts").value(state, 0);
}

void wait_run_finished(Daemon& d, const std::string& id, milliseconds timeout) {
  d.wait_until([&] { return run_of(d, id)["state"] == "finished"; }, timeout,
               "run " + id + " to finish");
}

Json instances_of(Daemon& d, const std::string& id, int n) {
  return d.api("GET", "/runs/" + id + "/instances?steps=true&limit=" + std::to_string(n))
      .json["instances"];
}

std::string history_problem(const Json& in, int steps) {
  if (in["state"] != "passed") return "state " + in["state"].dump();
  const Json& h = in["steps"];
  if (static_cast<int>(h.size()) != steps) return "history " + h.dump();
  for (int k = 0; k < steps; ++k) {
    if (h[k]["step"] != k || h[k]["state"] != "passed") return "history " + h.dump();
  }
  return "";
}

int count_history_problems(const Json& instances, int steps) {
  int bad = 0;
  for (const Json& in : instances) {
    std::string problem = history_problem(in, steps);
    if (!problem.empty() && ++bad <= 3) UNSCOPED_INFO("instance " << in["i"] << ": " << problem);
  }
  return bad;
}

Json job_poll_scenario(const std::string& name, int done_after_ms, const std::string& every) {
  return {{"name", name},
          {"steps",
           {{{"name", "start"},
             {"request",
              {{"method", "POST"},
               {"url", "{{base}}/jobs"},
               {"json", {{"done_after_ms", done_after_ms}}}}},
             {"expect", {{{"status", 201}}}},
             {"capture", {{"id", {{"json", "/id"}}}}}},
            {{"name", "wait"},
             {"request", {{"url", "{{base}}/jobs/{{id}}"}}},
             {"poll",
              {{"every", every},
               {"timeout", "2m"},
               {"until", {{{"json", "/status"}, {"equals", "done"}}}}}}}}}};
}

int count_resume_reason(const Json& instances, const std::string& why) {
  int n = 0;
  for (const Json& in : instances) {
    for (const Json& r : in["resume_reasons"]) n += r == why ? 1 : 0;
  }
  return n;
}

}  // namespace corral::test
