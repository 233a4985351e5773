// The parallel step: how its branches parse into the flat step list, and on the engine how they
// run at once, join (all, any, at_least), wait for their turn, hand on their captures, fail,
// time out, and carry every branch's position in the instance's checkpoint.
#include "config/scenario/parse.h"
#include "steps/parallel/parallel.h"
#include "tests/support/raw_http_server.h"
#include "tests/unit/worker/engine_fixture.h"

namespace corral::test::engine {
namespace {

using corral::test::RawHttpServer;
using corral::test::RawRequest;
using corral::test::Script;
using steps::parallel::Parallel;

json sleep_step(const std::string& d) { return {{"sleep", d}}; }
json post_job() {
  return {{"request", {{"method", "POST"}, {"url", "{{base}}/jobs"}, {"json", {{"polls_to_done", 1}}}}},
          {"expect", json::array({{{"status", 201}}})},
          {"capture", {{"job", {{"json", "/id"}}}}}};
}
json get_job(const std::string& var) {
  return {{"request", {{"url", "{{base}}/jobs/{{" + var + "}}"}}},
          {"expect", json::array({{{"status", 200}}})}};
}
json failing_step() {
  return {{"request", {{"url", "{{base}}/fail?status=503"}}},
          {"expect", json::array({{{"status", 200}}})}};
}
json branch(const std::string& name, json steps) { return {{"name", name}, {"steps", steps}}; }
json parallel(json branches, json extra = json::object()) {
  json p = {{"parallel", std::move(branches)}};
  p.update(extra);
  return p;
}
json scenario(json steps) { return {{"name", "par"}, {"steps", std::move(steps)}}; }

std::string parse_error(const json& doc) {
  auto s = scenario::parse_scenario(doc, std::set<std::string>{"base"});
  REQUIRE_FALSE(s.is_ok());
  return s.status().message();
}

// The step events of instance 0 for step `step`.
std::vector<json> events_of_step(const Fixture& f, int step) {
  std::vector<json> out;
  for (const json& e : f.of("step")) {
    if (e["step"] == step) out.push_back(e);
  }
  return out;
}

TEST_CASE("parallel parse: branches' steps follow the scenario's own, each branch in a row") {
  json doc = scenario({post_job(),
                       parallel({branch("eu", {post_job(), get_job("job")}),
                                 json::array({sleep_step("1s")})},
                                {{"join", {{"at_least", 1}}}, {"max_concurrent", 1}}),
                       get_job("eu.job")});
  auto s = scenario::parse_scenario(doc, std::set<std::string>{"base"});
  INFO((s ? "" : s.status().message()));
  REQUIRE(s.is_ok());
  const auto& steps = (*s)->steps;
  REQUIRE(steps.size() == 6);
  CHECK((*s)->top_steps() == 3);
  const Parallel& p = steps[1].spec_as<Parallel>();
  const auto& branches = steps[1].branches;
  REQUIRE(branches.size() == 2);
  CHECK(branches[0].name == "eu");
  CHECK(branches[0].first == 3);
  CHECK(branches[1].name == "branch1");  // an unnamed branch is named by its place
  CHECK(branches[1].first == 5);
  CHECK(p.needed == 1);
  CHECK(p.max_concurrent == 1);
  CHECK(steps[1].name == "parallel (eu, branch1)");
  CHECK(steps[3].list_end == 5);
  CHECK(steps[4].list_end == 5);
  CHECK(steps[5].list_end == 6);
  CHECK(steps[2].list_end == 3);
  CHECK(steps[3].branch == "eu");
  CHECK(steps[5].branch == "branch1");
  CHECK(steps[2].branch.empty());
}

TEST_CASE("parallel parse: a branch's captures are seen inside it and, after, as <branch>.<name>") {
  // Inside the branch, but not in its sibling, nor after the join under its own name.
  CHECK(parse_error(scenario({parallel({branch("a", {post_job()}), json::array({get_job("job")})})})) ==
        R"(steps[0].parallel[1][0].request.url: unknown variable "job" in "{{base}}/jobs/{{job}}")");
  // Nor as a.job: it exists only once the join is past.
  CHECK(
      parse_error(
          scenario({parallel({branch("a", {post_job()}), json::array({get_job("a.job")})})})) ==
      R"(steps[0].parallel[1][0].request.url: unknown variable "a.job" in "{{base}}/jobs/{{a.job}}")");
  CHECK(
      parse_error(scenario({parallel({branch("a", {post_job()})}), get_job("job")})) ==
      R"(steps[1].request.url: unknown variable "job" (did you mean "a.job"?) in "{{base}}/jobs/{{job}}")");
  // Nested: the inner branch's capture is <outer>.<inner>.<name> after both joins.
  json nested = scenario({parallel({branch("o", {parallel({branch("i", {post_job()})}),
                                                 get_job("i.job")})}),
                          get_job("o.i.job")});
  CHECK(scenario::parse_scenario(nested, std::set<std::string>{"base"}).is_ok());
}

TEST_CASE("parallel parse: errors name the branch and the field") {
  struct Case {
    json doc;
    std::string error;
  };
  const std::vector<Case> cases = {
      {scenario({parallel(json::array())}), "steps[0].parallel: expected a non-empty array of branches"},
      {scenario({parallel({json::array()})}), "steps[0].parallel[0]: expected a non-empty array of steps"},
      {scenario({parallel({7})}),
       R"(steps[0].parallel[0]: expected an array of steps or {"name": ..., "steps": [...]})"},
      {scenario({parallel({branch("a", {sleep_step("1s")}), branch("a", {sleep_step("1s")})})}),
       R"(steps[0].parallel[1]: another branch is called "a")"},
      {scenario({parallel({branch("a-b", {sleep_step("1s")})})}),
       R"(steps[0].parallel[0].name: a variable name may hold only letters, digits and "_")"},
      {scenario({parallel({json::array({sleep_step("1s")})}, {{"join", {{"at_least", 2}}}})}),
       "steps[0].join.at_least: expected an integer from 1 to 1, got 2"},
      {scenario({parallel({json::array({sleep_step("1s")})}, {{"join", "some"}})}),
       R"(steps[0].join: expected "all", "any" or {"at_least": n}, got "some")"},
      {scenario({parallel({json::array({sleep_step("1s")})}, {{"max_concurrent", 0}})}),
       "steps[0].max_concurrent: expected an integer from 1 to 100000, got 0"},
      {scenario({parallel({json::array({{{"callback", json::object()}}})})}),
       "steps[0].parallel[0][0]: a callback step cannot wait inside a parallel branch: put it "
       "after the parallel step"},
      {scenario({parallel({json::array({sleep_step("1s")})}, {{"capture", json::object()}})}),
       "steps[0].capture: a parallel step's branches capture; after the join their variables "
       "read {{<branch>.<name>}}"},
      {scenario({parallel({json::array({sleep_step("1s"), {{"name", "x"}}})})}),
       "steps[0].parallel[0][1]: a step needs exactly one of \"callback\", \"exec\", "
       "\"parallel\", \"poll\", \"request\", \"sleep\", \"ws\", \"ws_close\", \"ws_receive\", \"ws_send\""},
  };
  for (const Case& c : cases) {
    INFO(c.doc.dump());
    CHECK(parse_error(c.doc).rfind(c.error, 0) == 0);
  }
}

TEST_CASE("parallel step: every branch runs, and their captures reach the steps after the join") {
  Fixture f;
  f.start(scenario({post_job(),
                    parallel({branch("eu", {get_job("job"), post_job()}),
                              branch("us", {post_job(), get_job("job")})}),
                    get_job("eu.job"), get_job("us.job")}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("done")[0]["state"] == "passed");
  // A branch's step events carry the instance's checkpoint, still at the parallel step.
  for (int step : {4, 5, 6, 7}) {
    auto evs = events_of_step(f, step);
    REQUIRE(evs.size() == 1);
    CHECK(evs[0]["state"] == "passed");
    CHECK(evs[0]["checkpoint"]["step"] == 1);
    CHECK(evs[0]["checkpoint"]["branches"].size() == 2);
    CHECK_FALSE(evs[0].contains("vars"));
  }
  auto joined = events_of_step(f, 1);
  REQUIRE(joined.size() == 1);
  CHECK(joined[0]["vars"].contains("eu.job"));
  CHECK(joined[0]["vars"].contains("us.job"));
  CHECK(joined[0]["vars"]["eu.job"] != joined[0]["vars"]["us.job"]);
  CHECK(joined[0]["vars"]["job"] != joined[0]["vars"]["eu.job"]);  // the instance's own, kept
  CHECK(f.engine->active() == 0);
}

TEST_CASE("parallel step: with join any the first to pass wins and the others are cancelled") {
  Fixture f;
  f.start(scenario({parallel({branch("slow", {sleep_step("10s"), post_job()}),
                              branch("fast", {post_job()})},
                             {{"join", "any"}}),
                    get_job("fast.job")}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }, 5000));
  CHECK(f.of("done")[0]["state"] == "passed");
  CHECK(events_of_step(f, 2).empty());  // the slow branch's sleep never ended
  CHECK(f.engine->active() == 0);
  CHECK_FALSE(f.run_until([&] { return f.events.size() > 4; }, 200));  // nothing more comes

  Fixture g;  // the cancelled branch handed on nothing
  g.start(scenario({parallel({branch("slow", {sleep_step("10s"), post_job()}),
                              branch("fast", {sleep_step("0s")})},
                             {{"join", "any"}}),
                    get_job("slow.job")}));
  REQUIRE(g.run_until([&] { return g.done_count() == 1; }, 5000));
  CHECK(g.of("done")[0]["state"] == "errored");
  CHECK(g.of("done")[0]["reason"].get<std::string>().find("\"slow.job\"") != std::string::npos);
}

TEST_CASE("parallel step: a cancelled branch's request in flight is aborted, its connection closed") {
  // A server that never answers and sees its connections close (corral-target's server stops
  // reading while it holds a request, so it would not see the client go).
  Fixture f;
  RawHttpServer never(&f.loop, [](const RawRequest&) { return Script{}; });
  json hang = {{"request", {{"url", never.url("/hang")}, {"timeout", "60s"}}}};
  f.start(scenario({parallel({branch("slow", {hang}), branch("fast", {sleep_step("200ms")})},
                             {{"join", "any"}})}));
  REQUIRE(f.run_until([&] { return never.requests().size() == 1; }));
  CHECK(never.open_connections() == 1);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }, 5000));
  CHECK(f.of("done")[0]["state"] == "passed");
  // The server sees the client go: the request is not left to run out its 60 s.
  CHECK(f.run_until([&] { return never.open_connections() == 0; }, 5000));
  CHECK(f.http->in_flight() == 0);
  for (const auto& [origin, errors] : f.http->origin_errors()) {  // a cancel is no error
    CHECK(errors.timeout + errors.reset + errors.connect == 0);
  }
  never.close();
}

TEST_CASE("parallel step: join all fails on the first failed branch and cancels the rest") {
  Fixture f;
  f.start(scenario({parallel({branch("slow", {sleep_step("10s")}), branch("bad", {failing_step()})}),
                    sleep_step("0s")}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }, 5000));
  json done = f.of("done")[0];
  INFO(done.dump());
  CHECK(done["state"] == "failed");
  CHECK(done["reason"].get<std::string>().rfind("branch \"bad\": expect: status was 503, expected 200", 0) == 0);
  auto failed = events_of_step(f, 3);  // the bad branch's step, reported failed
  REQUIRE(failed.size() == 1);
  CHECK(failed[0]["state"] == "failed");
  CHECK(failed[0]["checkpoint"]["branches"][1]["failed"].is_string());
  auto par = events_of_step(f, 0);
  REQUIRE(par.size() == 1);
  CHECK(par[0]["state"] == "failed");
  CHECK(f.engine->active() == 0);
}

TEST_CASE("parallel step: at_least fails once too few branches can still pass") {
  Fixture f;
  f.start(scenario({parallel({branch("a", {failing_step()}), branch("b", {sleep_step("20ms")}),
                              branch("c", {failing_step()})},
                             {{"join", {{"at_least", 2}}}})}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }, 5000));
  json done = f.of("done")[0];
  CHECK(done["state"] == "failed");
  std::string reason = done["reason"];
  CHECK(reason.rfind("2 of 3 branches failed, 2 must pass: branch \"a\": ", 0) == 0);
  CHECK(reason.find("; branch \"c\": ") != std::string::npos);

  Fixture g;  // and passes once enough did
  g.start(scenario({parallel({branch("a", {failing_step()}), branch("b", {sleep_step("20ms")}),
                              branch("c", {sleep_step("30ms")})},
                             {{"join", {{"at_least", 2}}}})}));
  REQUIRE(g.run_until([&] { return g.done_count() == 1; }, 5000));
  CHECK(g.of("done")[0]["state"] == "passed");
}

TEST_CASE("parallel step: max_concurrent runs branches in turns, in order") {
  Fixture f;
  f.start(scenario({parallel({json::array({sleep_step("60ms")}), json::array({sleep_step("60ms")}),
                              json::array({sleep_step("60ms")})},
                             {{"max_concurrent", 1}})}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }, 5000));
  CHECK(f.of("done")[0]["state"] == "passed");
  int64_t last_end = 0;
  for (int step : {1, 2, 3}) {
    auto evs = events_of_step(f, step);
    REQUIRE(evs.size() == 1);
    CHECK(evs[0]["started_ms"].get<int64_t>() >= last_end);  // after the one before it ended
    last_end = evs[0]["ended_ms"];
  }
}

TEST_CASE("parallel step: a branch reads the instance's variables, and its own captures first") {
  Fixture f;
  f.start(scenario({post_job(),
                    parallel({branch("a", {get_job("job"), post_job(), get_job("job")})}),
                    get_job("a.job")}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("done")[0]["state"] == "passed");
  json vars = events_of_step(f, 1)[0]["vars"];
  CHECK(vars["job"] == "1");   // the instance's job, the first the target made
  CHECK(vars["a.job"] == "2");  // the branch's, which shadowed it inside the branch
}

TEST_CASE("parallel step: its timeout fails it and cancels its branches") {
  Fixture f;
  f.start(scenario({parallel({json::array({sleep_step("10s")}), json::array({sleep_step("10s")})},
                             {{"timeout", "150ms"}})}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }, 5000));
  CHECK(f.of("done")[0]["state"] == "failed");
  CHECK(f.of("done")[0]["reason"] == "parallel timed out after 150ms");
  CHECK(f.engine->active() == 0);
}

TEST_CASE("parallel step: nested branches hand their captures up through both joins") {
  Fixture f;
  f.start(scenario({parallel({branch("o", {parallel({branch("i", {post_job()}),
                                                     branch("j", {sleep_step("10ms")})}),
                                           get_job("i.job")})}),
                    get_job("o.i.job")}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("done")[0]["state"] == "passed");
  CHECK(events_of_step(f, 0)[0]["vars"].contains("o.i.job"));
}

TEST_CASE("parallel step: its checkpoint holds every branch, and a resumed instance goes on from there") {
  Fixture f;
  json doc = scenario({parallel({branch("a", {post_job(), sleep_step("400ms")}),
                                 branch("b", {sleep_step("400ms")}),
                                 branch("c", {failing_step()})},
                                {{"join", {{"at_least", 2}}}}),
                       get_job("a.job")});
  f.start(doc);
  REQUIRE(f.run_until([&] { return events_of_step(f, 2).size() == 1 && events_of_step(f, 5).size() == 1; }));
  json taken = f.engine->take_all();
  CHECK(f.engine->active() == 0);
  json cp = taken["r1"]["0"];
  REQUIRE(cp["branches"].size() == 3);
  CHECK(cp["step"] == 0);
  CHECK(cp["branches"][0]["checkpoint"]["step"] == 3);  // a: at its sleep, its job captured
  CHECK(cp["branches"][0]["checkpoint"]["vars"].contains("job"));
  CHECK(cp["branches"][1]["checkpoint"]["step"] == 4);  // b: sleeping
  CHECK(cp["branches"][2]["failed"].is_string());       // c: failed, and stays so

  auto decoded = ipc::checkpoint_from_json(cp);
  REQUIRE(decoded.is_ok());
  size_t jobs_before = f.target->jobs();
  REQUIRE(f.engine->start("r1", 0, *decoded).is_ok());
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("done")[0]["state"] == "passed");
  CHECK(f.target->jobs() == jobs_before);  // a's POST was not sent again
  CHECK(events_of_step(f, 2).size() == 1);
  CHECK(events_of_step(f, 5).size() == 1);  // nor c's request
  CHECK(events_of_step(f, 0)[0]["vars"].contains("a.job"));
}

TEST_CASE("parallel step: cancelling the run ends its branches, and a load run refuses branches") {
  Fixture f;
  f.start(scenario({parallel({json::array({sleep_step("10s")}), json::array({post_job(), sleep_step("10s")})})}));
  REQUIRE(f.run_until([&] { return events_of_step(f, 2).size() == 1; }));
  CHECK(f.engine->active() == 1);
  f.engine->cancel_run("r1");
  CHECK(f.engine->active() == 0);
  CHECK_FALSE(f.run_until([&] { return f.done_count() > 0; }, 100));

  Status s = f.engine->define_load_run("load", scenario({parallel({json::array({sleep_step("1s")})})}),
                                       {}, nullptr, 0);
  CHECK(s.message() == "a load run cannot run a step with branches (parallel)");
  CHECK_FALSE(f.engine->has_run("load"));
}

}  // namespace
}  // namespace corral::test::engine
