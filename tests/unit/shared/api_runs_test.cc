// The answer models of the runs API (shared/api/runs.h): what the master writes, the CLI reads
// back the same; a field of the wrong type is an error that names it; the wire's field names
// and null-or-absent rules are fixed (docs and integration tests read them).
#include <catch2/catch.hpp>

#include "shared/api/runs.h"

namespace corral::api {
namespace {

using nlohmann::json;

RunSummary summary_of(const std::string& id, const std::string& state) {
  RunSummary s;
  s.id = id;
  s.scenario = "checkout";
  s.state = state;
  s.instances = 10;
  s.created_at = "2026-12-05T14:00:00.000Z";
  if (state == "finished") s.finished_at = "2026-12-05T14:00:42.000Z";
  s.counts.queued = 1;
  s.counts.running = 2;
  s.counts.passed = 3;
  s.counts.failed = 2;
  s.counts.errored = 1;
  s.counts.cancelled = 1;
  return s;
}

RunDetail full_detail() {
  RunDetail d;
  static_cast<RunSummary&>(d) = summary_of("r3-00af", "running");
  d.duration_ms = {1500, 12000, 41250};
  d.failures = {{1, "wait for A", "until not met after 3 attempts", 2},
                {0, "start A", "connect: connection refused", 1}};
  d.vars = {{"region", "eu"}};
  d.priority = 7;
  d.steps = {{0, "start A"}, {1, "wait for A"}};
  d.quarantine = RunQuarantine{"worker_hung 3 times in 10m", 3};
  d.data = {{"path", "/srv/rows.csv"}, {"format", "csv"}, {"rows", 10}};
  d.queued_reason = "a reload is replacing the workers";
  return d;
}

StepEntry full_step() {
  StepEntry s;
  s.step = 5;
  s.name = "GET /cart";
  s.state = "failed";
  s.attempts = 3;
  s.started_at = "2026-12-05T14:00:01.000Z";
  s.ended_at = "2026-12-05T14:00:02.000Z";
  s.duration_ms = 1000;
  s.status = 503;
  s.branch = "eu";
  s.until_ms = 900;
  s.tls_ms = 1.5;
  s.reason = "expect: status was 503";
  s.url = "https://shop.example/cart";
  s.body = "{\"error\": \"quota\"}";
  return s;
}

InstanceEntry full_instance() {
  InstanceEntry e;
  e.i = 4;
  e.state = "failed";
  e.step = 5;
  e.reason = "expect: status was 503";
  e.resumes = 1;
  e.resume_reasons = {"worker 0 exited (signal SIGKILL)"};
  e.started_at = "2026-12-05T14:00:00.000Z";
  e.ended_at = "2026-12-05T14:00:02.000Z";
  e.duration_ms = 2000;
  e.worker = 1;
  e.callback = InstanceCallback{2, true};
  BranchEntry running;
  running.name = "us";
  running.state = "running";
  running.step = 6;
  running.step_name = "wait";
  BranchEntry failed;
  failed.name = "ap";
  failed.state = "errored";
  failed.reason = "connect: refused";
  e.branches = std::vector<BranchEntry>{running, failed};
  e.vars = {{"cart", "c-1"}};
  e.steps = std::vector<StepEntry>{full_step()};
  e.key = "a@example.com";
  e.row = {{"email", "a@example.com"}};
  e.row_error = "";
  return e;
}

TEST_CASE("api runs: each answer reads back as the master wrote it") {
  RunsAnswer runs;
  runs.runs = {summary_of("r2-00b1", "running"), summary_of("r1-00a0", "finished"), RunSummary{}};
  auto runs_back = runs_from_json(json::parse(to_json(runs).dump()));
  INFO((runs_back ? "" : runs_back.status().message()));
  REQUIRE(runs_back.is_ok());
  CHECK(*runs_back == runs);

  const RunDetail d = full_detail();
  auto d_back = run_detail_from_json(json::parse(to_json(d).dump()));
  INFO((d_back ? "" : d_back.status().message()));
  REQUIRE(d_back.is_ok());
  CHECK(*d_back == d);

  InstancesAnswer list;
  list.run = "r3-00af";
  list.instances = {full_instance(), InstanceEntry{}};
  list.next = 100;
  auto list_back = instances_from_json(json::parse(to_json(list).dump()));
  INFO((list_back ? "" : list_back.status().message()));
  REQUIRE(list_back.is_ok());
  CHECK(*list_back == list);
  CHECK_FALSE(list_back->instances[1].steps);  // written without steps: none
}

TEST_CASE("api runs: a field of the wrong type is an error that names its path") {
  json j = to_json(RunsAnswer{
      {summary_of("a", "running"), summary_of("b", "queued"), summary_of("c", "running")}});
  j["runs"][2]["counts"]["passed"] = "3";
  auto runs = runs_from_json(j);
  REQUIRE_FALSE(runs.is_ok());
  CHECK_THAT(runs.status().message(), Catch::StartsWith("runs[2].counts.passed: expected"));

  j = to_json(full_detail());
  j["failures"][1]["count"] = -1;
  auto detail = run_detail_from_json(j);
  REQUIRE_FALSE(detail.is_ok());
  CHECK_THAT(detail.status().message(), Catch::StartsWith("run.failures[1].count: expected"));

  InstancesAnswer list;
  list.instances = {InstanceEntry{}, full_instance()};
  j = to_json(list);
  j["instances"][1]["steps"][0]["status"] = "503";
  auto instances = instances_from_json(j);
  REQUIRE_FALSE(instances.is_ok());
  CHECK_THAT(instances.status().message(),
             Catch::StartsWith("instances[1].steps[0].status: expected"));
  j = to_json(full_instance());
  j["resume_reasons"] = json::array({"ok", 7});
  auto one = instance_from_json(j);
  REQUIRE_FALSE(one.is_ok());
  CHECK_THAT(one.status().message(), Catch::StartsWith("instance.resume_reasons[1]: expected"));
  CHECK_FALSE(runs_from_json(json::array()).is_ok());
  CHECK_FALSE(instances_from_json(json{{"run", "r1"}}).is_ok());
}

TEST_CASE("api runs: an absent field keeps its default, an unknown one is ignored") {
  auto detail = run_detail_from_json({{"id", "r1-0001"}, {"colour", "blue"}});
  REQUIRE(detail.is_ok());
  CHECK(detail->id == "r1-0001");
  CHECK(detail->priority == 1);
  CHECK(detail->counts == RunCounts{});
  CHECK_FALSE(detail->created_at);
  CHECK_FALSE(detail->quarantine);
  CHECK_FALSE(detail->queued_reason);
  CHECK(detail->data.is_null());
  auto in = instance_from_json({{"i", 3}, {"worker", nullptr}, {"next_hop", 1}});
  REQUIRE(in.is_ok());
  CHECK(in->i == 3);
  CHECK_FALSE(in->worker);  // null reads as none
  CHECK_FALSE(in->steps);
  CHECK_FALSE(in->key);
}

TEST_CASE("api runs: the wire's field names and null-or-absent rules") {
  RunDetail d;
  static_cast<RunSummary&>(d) = summary_of("r1-0001", "queued");
  d.created_at.reset();
  d.failures = {{1, "b", "why", 2}};
  d.steps = {{0, "a"}};
  CHECK(to_json(d).dump() ==
        R"j({"counts":{"cancelled":1,"errored":1,"failed":2,"passed":3,"queued":1,"running":2},)j"
        R"j("created_at":null,"duration_ms":{"max":0,"p50":0,"p95":0},)j"
        R"j("failures":[{"count":2,"reason":"why","step":1,"step_name":"b"}],"finished_at":null,)j"
        R"j("id":"r1-0001","instances":10,"priority":1,"scenario":"checkout",)j"
        R"j("state":"queued","steps":[{"name":"a","step":0}],"vars":null})j");
  InstanceEntry e = full_instance();
  e.key.reset();
  e.row.reset();
  e.row_error = "cannot open /srv/rows.csv";
  e.branches->pop_back();
  CHECK(to_json(e).dump() ==
        R"j({"branches":[{"name":"us","state":"running","step":6,"step_name":"wait"}],)j"
        R"j("callback":{"called":true,"step":2},"duration_ms":2000,)j"
        R"j("ended_at":"2026-12-05T14:00:02.000Z","i":4,"reason":"expect: status was 503",)j"
        R"j("resume_reasons":["worker 0 exited (signal SIGKILL)"],"resumes":1,)j"
        R"j("row_error":"cannot open /srv/rows.csv","started_at":"2026-12-05T14:00:00.000Z",)j"
        R"j("state":"failed","step":5,"steps":[{"attempts":3,"body":"{\"error\": \"quota\"}",)j"
        R"j("branch":"eu","duration_ms":1000,"ended_at":"2026-12-05T14:00:02.000Z",)j"
        R"j("name":"GET /cart","reason":"expect: status was 503",)j"
        R"j("started_at":"2026-12-05T14:00:01.000Z","state":"failed","status":503,"step":5,)j"
        R"j("tls_ms":1.5,"until_ms":900,"url":"https://shop.example/cart"}],)j"
        R"j("vars":{"cart":"c-1"},"worker":1})j");
  InstanceEntry bare;
  bare.state = "queued";
  CHECK(to_json(bare).dump() ==
        R"j({"duration_ms":0,"ended_at":null,"i":0,"reason":"","resume_reasons":[],"resumes":0,)j"
        R"j("started_at":null,"state":"queued","step":0})j");
  CHECK(to_json(InstancesAnswer{"r1-0001", {}, std::nullopt}).dump() ==
        R"j({"instances":[],"next":null,"run":"r1-0001"})j");
}

TEST_CASE("api runs: the answer to POST /runs, with and without data rows") {
  SubmitAnswer plain;
  plain.run = "r1-00c3";
  plain.instances = 100;
  CHECK(to_json(plain).dump() == R"j({"instances":100,"run":"r1-00c3"})j");
  auto plain_back = submit_answer_from_json(to_json(plain));
  REQUIRE(plain_back.is_ok());
  CHECK(*plain_back == plain);

  SubmitAnswer rows;
  rows.run = "r2-00c4";
  rows.instances = 3;
  rows.data = DataRows{3, 2, {{4, "not a JSON object"}, {9, "too long"}}};
  rows.warning = "the journal cannot be written: disk full";
  CHECK(
      to_json(rows).dump() ==
      R"j({"data":{"bad":[{"error":"not a JSON object","line":4},{"error":"too long","line":9}],)j"
      R"j("rows":3,"skipped":2},"instances":3,"run":"r2-00c4",)j"
      R"j("warning":"the journal cannot be written: disk full"})j");
  auto rows_back = submit_answer_from_json(json::parse(to_json(rows).dump()));
  INFO((rows_back ? "" : rows_back.status().message()));
  REQUIRE(rows_back.is_ok());
  CHECK(*rows_back == rows);

  json j = to_json(rows);
  j["data"]["bad"][1]["line"] = "9";
  auto wrong = submit_answer_from_json(j);
  REQUIRE_FALSE(wrong.is_ok());
  CHECK_THAT(wrong.status().message(), Catch::StartsWith("data.bad[1].line: expected"));
  CHECK_FALSE(submit_answer_from_json(json{{"instances", 3}}).is_ok());  // no run: no answer
}

}  // namespace
}  // namespace corral::api
