// Scenario files: the model parse_scenario() builds, and the errors it reports.
#include <catch2/catch.hpp>

#include "config/scenario/parse.h"
#include "steps/poll/poll.h"
#include "steps/sleep/sleep.h"

namespace corral::scenario {
namespace {

using nlohmann::json;
using steps::poll::Poll;
using steps::sleep::Sleep;

// The example from issue 3.
constexpr const char* kExample = R"({
  "name": "job-a-then-b",
  "vars": {"base": "http://127.0.0.1:8081"},
  "steps": [
    {"name": "start A",
     "request": {"method": "POST", "url": "{{base}}/jobs", "json": {"polls_to_done": 3}},
     "expect": [{"status": 201}],
     "capture": {"job": {"json": "/id"}}},
    {"name": "wait for A",
     "request": {"method": "GET", "url": "{{base}}/jobs/{{job}}"},
     "poll": {"every": "10s", "timeout": "10m",
              "until": [{"json": "/status", "equals": "done"}],
              "fail_if": [{"json": "/status", "equals": "failed"}]}},
    {"name": "breathe", "sleep": "2s"}
  ]
})";

std::shared_ptr<const Scenario> parse_ok(const std::string& text,
                                         const std::set<std::string>& extra = {}) {
  Result<std::shared_ptr<const Scenario>> s = parse_scenario(json::parse(text), extra);
  INFO((s ? "" : s.status().message()));
  REQUIRE(s.is_ok());
  return *s;
}

std::string parse_error(const std::string& text) {
  Result<std::shared_ptr<const Scenario>> s = parse_scenario(json::parse(text));
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.status().code() == Code::kInvalidArgument);
  return s.status().message();
}

// A scenario of one step.
std::string one_step(const std::string& step) {
  return R"({"name": "t", "vars": {"base": "http://h"}, "steps": [)" + step + "]}";
}

TEST_CASE("scenario parser: the issue's example parses into the expected model") {
  std::shared_ptr<const Scenario> s = parse_ok(kExample);
  CHECK(s->name == "job-a-then-b");
  CHECK(s->vars == json{{"base", "http://127.0.0.1:8081"}});
  CHECK(s->source == json::parse(kExample));
  REQUIRE(s->steps.size() == 3);

  const Step& start = s->steps[0];
  CHECK(start.name == "start A");
  CHECK(start.index == 0);
  CHECK(start.kind->name == "request");
  CHECK(start.request.method == "POST");
  CHECK(start.request.url.source() == "{{base}}/jobs");
  REQUIRE(start.request.json.has_value());
  CHECK(start.request.json->source() == json{{"polls_to_done", 3}});
  CHECK_FALSE(start.request.body.has_value());
  REQUIRE(start.request.headers.size() == 1);
  CHECK(start.request.headers[0].first == "Content-Type");
  CHECK(start.request.headers[0].second.source() == "application/json");
  CHECK(start.request.timeout_ms == 30000);
  REQUIRE(start.expect.size() == 1);
  CHECK(start.expect[0].subject == Subject::kStatus);
  CHECK(start.expect[0].op == Op::kEquals);
  CHECK(start.expect[0].operand == 201);
  REQUIRE(start.captures.size() == 1);
  CHECK(start.captures[0].name == "job");
  CHECK(start.captures[0].source == Capture::Source::kJson);
  CHECK(start.captures[0].pointer.to_string() == "/id");
  CHECK(start.retry.attempts == 1);
  CHECK(start.reads_json);

  const Step& wait = s->steps[1];
  CHECK(wait.name == "wait for A");
  CHECK(wait.kind->name == "poll");
  CHECK(wait.request.method == "GET");
  CHECK(wait.request.headers.empty());
  CHECK(wait.request.url.variables() == std::vector<std::string>{"base", "job"});
  CHECK(wait.spec_as<Poll>().every_ms == 10000);
  CHECK(wait.limit_ms == 600000);
  CHECK(wait.spec_as<Poll>().max_attempts == 0);
  CHECK(wait.spec_as<Poll>().backoff_factor == 1.0);
  REQUIRE(wait.spec_as<Poll>().until.size() == 1);
  CHECK(describe(wait.spec_as<Poll>().until[0]) == "/status equals \"done\"");
  REQUIRE(wait.spec_as<Poll>().fail_if.size() == 1);
  CHECK(describe(wait.spec_as<Poll>().fail_if[0]) == "/status equals \"failed\"");
  CHECK(wait.reads_json);

  const Step& breathe = s->steps[2];
  CHECK(breathe.name == "breathe");
  CHECK(breathe.kind->name == "sleep");
  CHECK(breathe.spec_as<Sleep>().ms == 2000);
  CHECK_FALSE(breathe.reads_json);
}

TEST_CASE("scenario parser: rejects invalid scenarios with a message naming the step and field") {
  struct Case {
    std::string doc;
    std::string error;
  };
  const std::string poll_start = R"({"name": "t", "vars": {"base": "http://h"}, "steps": [
      {"sleep": "1s"}, {"request": {"url": "{{base}}"}, "poll": )";
  const Case cases[] = {
      {"[1]", R"(expected a scenario: a JSON object with "name" and "steps")"},
      {R"({"name": 5, "steps": [{"sleep": "1s"}]})", "name: expected a string"},
      {R"({"steps": [{"sleep": "1s"}]})", "name: missing, expected a string"},
      {R"({"name": "t", "steps": []})", "steps: expected a non-empty array of steps"},
      {R"({"name": "t", "steps": {}})", "steps: expected a non-empty array of steps"},
      {R"({"name": "t"})", "steps: missing, expected a non-empty array"},
      {R"({"name": "t", "step": []})",
       "step: unknown field (did you mean \"steps\"?) (known: name, "
       "vars, steps, load, start_spread, limits, tls, http_version, trace_context, otlp_endpoint)"},
      {R"({"name": "t", "otlp_endpoint": "127.0.0.1:4318", "steps": [{"sleep": "1s"}]})",
       R"(otlp_endpoint: expected an http:// or https:// URL, as "http://127.0.0.1:4318")"},
      {R"({"name": "t", "otlp_endpoint": "grpc://c:4317", "steps": [{"sleep": "1s"}]})",
       R"(otlp_endpoint: expected an http:// or https:// URL, as "http://127.0.0.1:4318")"},
      {R"({"name": "t", "otlp_endpoint": 4318, "steps": [{"sleep": "1s"}]})",
       "otlp_endpoint: expected a string"},
      {R"({"name": "t", "vars": {"uuid": 1}, "steps": [{"sleep": "1s"}]})",
       R"(vars.uuid: "uuid" is a built-in variable)"},
      {R"({"name": "t", "vars": {"a-b": 1}, "steps": [{"sleep": "1s"}]})",
       R"(vars.a-b: a variable name may hold only letters, digits and "_")"},
      {one_step(R"({"request": {"url": "{{base}}"}, "pol": {}})"),
       "steps[0].pol: unknown field (did you mean \"poll\"?) (known: name, callback, expect, "
       "abort_if, capture, exec, parallel, join, max_concurrent, timeout, request, poll, retry, "
       "sleep, jitter, ws, ws_close, ws_receive, ws_send)"},
      // A misspelt mark, or a kind corral does not have, is named, not reported as a step
      // without one; a misspelt field beside no mark stays a misspelt field.
      {one_step(R"({"requst": {"url": "{{base}}"}, "expct": []})"),
       "steps[0].requst: unknown step kind \"requst\" (did you mean \"request\"?) (kinds: "
       "\"callback\", \"exec\", \"parallel\", \"poll\", \"request\", \"sleep\", \"ws\", "
       "\"ws_close\", \"ws_receive\", \"ws_send\")"},
      {one_step(R"({"name": "go", "teleport": {"to": "mars"}})"),
       "steps[0].teleport: unknown step kind \"teleport\" (kinds: \"callback\", \"exec\", "
       "\"parallel\", \"poll\", \"request\", \"sleep\", \"ws\", \"ws_close\", \"ws_receive\", "
       "\"ws_send\")"},
      {one_step(R"({"expct": [], "timeout": "1s"})"),
       "steps[0].expct: unknown field (did you mean \"expect\"?) (known: name, callback, expect, "
       "abort_if, capture, exec, parallel, join, max_concurrent, timeout, request, poll, retry, "
       "sleep, jitter, ws, ws_close, ws_receive, ws_send)"},
      {one_step(R"({"request": {"url": "{{bse}}/x"}})"),
       R"(steps[0].request.url: unknown variable "bse" (did you mean "base"?) in "{{bse}}/x")"},
      {one_step(R"({"request": {"method": "FETCH", "url": "{{base}}"}})"),
       R"(steps[0].request.method: expected one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, got "FETCH")"},
      {one_step(R"({"request": {"method": "GET"}})"),
       R"(steps[0].request.url: missing, expected a URL like "http://host/path")"},
      {one_step(R"({"request": {"url": "ftp://x"}})"),
       R"(steps[0].request.url: expected an http:// or https:// URL, got "ftp://x")"},
      {one_step(R"({"request": {"url": "http://x/{{a"}})"),
       R"(steps[0].request.url: unclosed "{{" in "http://x/{{a")"},
      {one_step(R"({"request": {"url": "{{base}}/{{a b}}"}})"),
       R"(steps[0].request.url: invalid variable reference "{{a b}}" in "{{base}}/{{a b}}")"},
      {one_step(R"({"request": {"url": "{{base}}", "json": {}, "body": "x"}})"),
       R"(steps[0].request: a request takes "json" or "body", not both)"},
      {one_step(R"({"request": {"url": "{{base}}", "timeout": 5}})"),
       R"(steps[0].request.timeout: expected a duration like "10s", got 5)"},
      {one_step(
           R"({"request": {"url": "{{base}}", "headers": {"Authorization": "Bearer {{token}}"}}})"),
       R"(steps[0].request.headers.Authorization: unknown variable "token" in "Bearer {{token}}")"},
      {one_step(R"({"request": {"url": "{{base}}", "json": {"user": {"id": "{{uid}}"}}}})"),
       R"(steps[0].request.json.user.id: unknown variable "uid" (did you mean "uuid"?) in "{{uid}}")"},
      {one_step(R"({"request": {"url": "{{base}}/{{job}}"}, "capture": {"job": {"json": "/id"}}})"),
       R"(steps[0].request.url: unknown variable "job" in "{{base}}/{{job}}")"},
      {one_step(R"({"request": {"url": "{{base}}"}, "capture": {"job": {"json": "id"}}})"),
       R"(steps[0].capture.job.json: "id" is not a JSON Pointer (it must start with "/"))"},
      {one_step(R"({"request": {"url": "{{base}}"}, "capture": {"job": {"json": "/a~2"}}})"),
       R"(steps[0].capture.job.json: "/a~2" is not a JSON Pointer (escape character '~' must be followed with '0' or '1'))"},
      {one_step(R"({"request": {"url": "{{base}}"}, "capture": {"run": {"status": true}}})"),
       R"(steps[0].capture.run: "run" is a built-in variable)"},
      {one_step(
           R"({"request": {"url": "{{base}}"}, "capture": {"j": {"status": true, "body": true}}})"),
       R"(steps[0].capture.j: a capture needs exactly one of "json", "header", "status", "body")"},
      {one_step(R"({"request": {"url": "{{base}}"}, "expect": [{"json": "/x"}]})"),
       R"(steps[0].expect[0]: a "json" condition needs exactly one of equals, not_equals, exists, in, lt, gt, matches)"},
      {one_step(R"({"request": {"url": "{{base}}"}, "expect": [{"json": "/x", "equal": 1}]})"),
       "steps[0].expect[0].equal: unknown field (did you mean \"equals\"?) (known: status, json, "
       "header, body_contains, exit_code, equals, not_equals, exists, in, lt, gt, matches)"},
      {one_step(R"({"request": {"url": "{{base}}"}, "expect": [{"status": 200, "json": "/x"}]})"),
       R"(steps[0].expect[0]: a condition needs exactly one of "status", "json", "header", "body_contains", "exit_code")"},
      {one_step(R"({"request": {"url": "{{base}}"}, "expect": [{"status": "200"}]})"),
       R"(steps[0].expect[0].status: expected a status code (100-599) or an array of them, got "200")"},
      {one_step(R"({"request": {"url": "{{base}}"}, "expect": [{"status": 200, "equals": 1}]})"),
       R"(steps[0].expect[0].equals: not allowed with "status")"},
      {one_step(
           R"({"request": {"url": "{{base}}"}, "expect": [{"header": "x", "exists": "yes"}]})"),
       R"(steps[0].expect[0].exists: expected true or false, got "yes")"},
      {one_step(R"({"request": {"url": "{{base}}"}, "expect": [{"json": "/n", "lt": "5"}]})"),
       R"(steps[0].expect[0].lt: expected a number, got "5")"},
      {one_step(R"({"request": {"url": "{{base}}"}, "expect": [{"json": "/n", "in": []}]})"),
       "steps[0].expect[0].in: expected a non-empty array"},
      {one_step(R"({"request": {"url": "{{base}}"}, "retry": {"attempts": 0}})"),
       "steps[0].retry.attempts: expected an integer from 1 to 100, got 0"},
      {one_step(R"({"request": {"url": "{{base}}"}, "retry": {"on": ["5xx", "500"]}})"),
       R"(steps[0].retry.on[1]: expected one of transport, 5xx, 4xx, expect, got "500")"},
      {one_step(
           R"({"request": {"url": "{{base}}"}, "retry": {"initial_interval": "5s", "max_interval": "1s"}})"),
       "steps[0].retry.max_interval: must not be shorter than initial_interval"},
      {one_step(R"({"sleep": "1s", "expect": []})"),
       R"(steps[0].expect: a "sleep" step takes only "name", "sleep", "jitter")"},
      {one_step(R"({"request": {"url": "{{base}}"}, "expect": {"exit_code": 256}})"),
       "steps[0].expect.exit_code: expected an exit code (0-255) or an array of them, got 256"},
      {one_step(R"({"exec": {"argv": []}})"),
       "steps[0].exec.argv: expected a non-empty array of strings"},
      {one_step(R"({"exec": {"argv": ["sh", "{{nope}}"]}})"),
       R"(steps[0].exec.argv[1]: unknown variable "nope" in "{{nope}}")"},
      {one_step(R"({"exec": {"argv": ["true"], "env": {"A=B": "x"}}})"),
       R"(steps[0].exec.env.A=B: an environment variable's name may not be empty or hold "=")"},
      {one_step(R"({"exec": {"argv": ["true"]}, "retry": {"attempts": 2}})"),
       "steps[0].retry: an exec step runs its command once; it is not retried"},
      {one_step(R"({"exec": {"argv": ["true"]}, "timeout": "1s"})"),
       R"(steps[0].timeout: an exec step's limit is "exec": {"timeout": ...})"},
      {one_step(
           R"({"request": {"url": "{{base}}"}, "expect": [{"status": 200}, {"exit_code": 0}]})"),
       R"(steps[0].expect[1]: a "request" step has no "exit_code" to check (its conditions read "status", "json", "header", "body_contains"))"},
      {one_step(R"({"callback": {}, "abort_if": {"status": 500}})"),
       R"(steps[0].abort_if: a "callback" step has no "status" to check (its conditions read "json", "body_contains"))"},
      {one_step(R"({"exec": {"argv": ["true"]}, "expect": {"header": "x", "exists": true}})"),
       R"(steps[0].expect: an "exec" step has no "header" to check (its conditions read "exit_code", "json", "body_contains"))"},
      {one_step(R"({"callback": "5m"})"),
       R"(steps[0].callback: expected an object like {"timeout": "30m"})"},
      {one_step(R"({"callback": {"timeout": "0s"}})"),
       R"(steps[0].callback.timeout: expected a duration greater than 0, got "0s")"},
      {one_step(R"({"callback": {"every": "1s"}})"),
       "steps[0].callback.every: unknown field (known: timeout, heartbeat)"},
      {one_step(R"({"callback": {}, "timeout": "1s"})"),
       R"(steps[0].timeout: a callback step's limit is "callback": {"timeout": ...})"},
      {one_step(R"({"request": {"url": "{{base}}", "json": {"cb": "{{callback_url}}"}}})"),
       "steps[0].request.json.cb: {{callback_url}} needs a callback step after this one"},
      {R"({"name": "t", "vars": {"callback_url": "x"}, "steps": [{"sleep": "1s"}]})",
       R"(vars.callback_url: "callback_url" is a built-in variable)"},
      {one_step(R"({"sleep": 5})"), R"(steps[0].sleep: expected a duration like "10s", got 5)"},
      {one_step(R"({"sleep": "1s", "abort_if": {"status": 500}})"),
       R"(steps[0].abort_if: a "sleep" step takes only "name", "sleep", "jitter")"},
      {one_step(R"({"request": {"url": "{{base}}"}, "jitter": 0.1})"),
       R"(steps[0].jitter: a step's "jitter" is for "sleep"; a poll's goes in "poll", a retry's in "retry")"},
      {one_step(R"({"sleep": "1s", "jitter": 1.5})"),
       "steps[0].jitter: expected a number from 0.0 to 1.0, got 1.5"},
      {one_step(R"({"request": {"url": "{{base}}"}, "retry": {"non_retryable": [501, 99]}})"),
       "steps[0].retry.non_retryable[1]: expected an integer from 100 to 599, got 99"},
      {one_step(R"({"request": {"url": "{{base}}"}, "retry": {"non_retryable": []}})"),
       "steps[0].retry.non_retryable: expected a non-empty array of HTTP statuses"},
      {one_step(R"({"name": "x", "request": {"url": "{{base}}"}, "sleep": "1s"})"),
       R"(steps[0]: a step needs exactly one of "callback", "exec", "parallel", "poll", "request", "sleep", "ws", "ws_close", "ws_receive", "ws_send")"},
      {one_step(R"({"poll": {"every": "1s"}})"),
       R"(steps[0].poll: a poll needs a "request" to repeat)"},
      {R"({"name": "t", "steps": [{"sleep": "1s"}, {"sleep": "1s"}, {"name": "x"}]})",
       R"(steps[2]: a step needs exactly one of "callback", "exec", "parallel", "poll", "request", "sleep", "ws", "ws_close", "ws_receive", "ws_send")"},
      {poll_start + R"({"every": 10, "timeout": "1m", "until": {"status": 200}}}]})",
       R"(steps[1].poll.every: expected a duration like "10s", got 10)"},
      {poll_start + R"({"timeout": "1m", "until": {"status": 200}}}]})",
       R"(steps[1].poll.every: missing, expected a duration like "10s")"},
      {poll_start + R"({"every": "0s", "timeout": "1m", "until": {"status": 200}}}]})",
       R"(steps[1].poll.every: expected a duration greater than 0, got "0s")"},
      {poll_start + R"({"every": "1s", "timeout": "0ms", "until": {"status": 200}}}]})",
       R"(steps[1].poll.timeout: expected a duration greater than 0, got "0ms")"},
      {poll_start + R"({"every": "1s", "timeout": "1m"}}]})",
       "steps[1].poll.until: missing, expected a condition or an array of conditions"},
      {poll_start + R"({"every": "1s", "timeout": "1m", "until": []}}]})",
       "steps[1].poll.until: expected a non-empty array"},
      {poll_start + R"({"every": "1s", "until": {"status": 200}}}]})",
       R"(steps[1].poll: a poll needs a "timeout" or "max_attempts", or it may never end)"},
      {poll_start +
           R"({"every": "1s", "timeout": "1m", "until": [{"json": "/s", "matches": "("}]}}]})",
       R"(steps[1].poll.until[0].matches: invalid regular expression "(": missing ))"},
      {poll_start +
           R"({"every": "1s", "timeout": "1m", "until": {"status": 200}, "backoff": 0.5}}]})",
       "steps[1].poll.backoff: expected a number from 1.0 to 10.0, got 0.5"},
      {poll_start +
           R"({"every": "5s", "timeout": "1m", "until": {"status": 200}, "max_interval": "1s"}}]})",
       "steps[1].poll.max_interval: must not be shorter than every"},
      {R"({"name": "t", "vars": {"base": "http://h"}, "steps": [{"sleep": "1s"},
          {"request": {"url": "{{base}}"}, "poll": {"every": "1s", "timeout": "1m", "until": {"status": 200}},
           "expect": {"status": 200}}]})",
       R"(steps[1].expect: a poll step checks responses with "until" and "fail_if", not "expect")"},
      {R"({"name": "t", "vars": {"base": "http://h"}, "steps": [{"sleep": "1s"}, {"sleep": "1s"},
          {"request": {"url": "{{base}}/jobs"}, "capture": {"job": {"json": "/id"}}},
          {"request": {"url": "{{base}}/jobs/{{jobb}}"}}]})",
       R"(steps[3].request.url: unknown variable "jobb" (did you mean "job"?) in "{{base}}/jobs/{{jobb}}")"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.doc);
    CHECK(parse_error(c.doc) == c.error);
  }
}

TEST_CASE(
    "scenario parser: variables come from vars, earlier captures, built-ins and run-time vars") {
  const std::string doc = R"({"name": "t", "vars": {"base": "http://h"}, "steps": [
      {"request": {"url": "{{base}}/a"}, "capture": {"id": {"json": "/id"}, "loc": {"header": "Location"}}},
      {"request": {"url": "{{ base }}/{{id}}/{{loc}}?i={{instance}}&r={{run}}&u={{uuid}}&h={{env.HOME}}&t={{token}}"}}]})";
  Result<std::shared_ptr<const Scenario>> without = parse_scenario(json::parse(doc));
  REQUIRE_FALSE(without.is_ok());
  CHECK(without.status().message().starts_with("steps[1].request.url: unknown variable \"token\""));
  std::shared_ptr<const Scenario> s = parse_ok(doc, {"token"});
  CHECK(s->steps[1].request.url.variables() ==
        std::vector<std::string>{"base", "id", "loc", "token"});
}

// Found by tests/fuzz/fuzz_scenario_parser (corpus/fuzz_scenario_parser/regress-deep-*): a
// request body nested 10,000 levels deep overflowed the stack while being copied and compiled.
TEST_CASE("scenario parser: refuses nesting deeper than kMaxNesting, naming where it starts") {
  auto nested = [](size_t levels, const std::string& inner) {
    return std::string(levels, '[') + inner + std::string(levels, ']');
  };
  // The document, "steps", the step and "request" are the first 4 levels.
  auto body = [&](const std::string& value) {
    return one_step(R"({"request": {"url": "{{base}}", "json": )" + value + "}}");
  };
  CHECK(parse_ok(body(nested(kMaxNesting - 4, "1")))->steps[0].request.json.has_value());
  std::string over = parse_error(body(nested(kMaxNesting - 3, "1")));
  CHECK(over.ends_with(": nested deeper than 64 levels of arrays and objects"));

  auto zeros = [](size_t n) {
    std::string s;
    while (n-- > 0) s += "[0]";
    return s;
  };
  // Levels 5 and 6 lead to a[1] (level 7); the first level past the limit is 65.
  CHECK(parse_error(body(R"({"a": [0, )" + nested(kMaxNesting, "") + "]}")) ==
        "steps[0].request.json.a[1]" + zeros(65 - 7) +
            ": nested deeper than 64 levels of arrays and objects");

  // Refused without recursing into it, whatever the depth.
  std::string deep_vars =
      R"({"name": "t", "steps": [{"sleep": "1s"}], "vars": {"v": )" + nested(100000, "") + "}}";
  CHECK(parse_error(deep_vars) ==
        "vars.v" + zeros(65 - 3) + ": nested deeper than 64 levels of arrays and objects");
}

TEST_CASE("scenario parser: fills defaults and normalises what it can") {
  std::shared_ptr<const Scenario> s = parse_ok(one_step(R"(
      {"request": {"method": "post", "url": "{{base}}/x", "json": [1],
                   "headers": {"content-type": "application/vnd+json"}}})"));
  const Step& step = s->steps[0];
  CHECK(step.name == "POST {{base}}/x");
  CHECK(step.request.method == "POST");
  REQUIRE(step.request.headers.size() == 1);  // the given content type is kept, not added
  CHECK(step.request.headers[0].second.source() == "application/vnd+json");
  CHECK_FALSE(step.reads_json);
  CHECK(step.retry.attempts == 1);
  CHECK(step.retry.initial_interval_ms == 1000);
  CHECK(step.retry.backoff_factor == 2.0);
  CHECK(step.retry.max_interval_ms == 30000);
  CHECK(step.retry.on == RetryOn{true, true, false, false});

  std::shared_ptr<const Scenario> get = parse_ok(one_step(R"({"request": {"url": "{{base}}"}})"));
  CHECK(get->steps[0].request.method == "GET");
  CHECK(get->steps[0].name == "GET {{base}}");
  CHECK(get->vars == json{{"base", "http://h"}});
  CHECK(parse_ok(one_step(R"({"sleep": "250ms"})"))->steps[0].name == "sleep 250ms");
}

TEST_CASE("scenario parser: reads retry and poll settings") {
  std::shared_ptr<const Scenario> s = parse_ok(one_step(R"(
      {"request": {"url": "{{base}}", "body": "id={{instance}}", "timeout": "2s"},
       "retry": {"attempts": 4, "initial_interval": "250ms", "backoff": 3, "max_interval": "1m",
                 "on": ["4xx", "expect"]},
       "poll": {"every": "1s", "max_attempts": 20, "backoff": 1.5, "max_interval": "8s",
                "until": {"header": "x-state", "matches": "^done"}}})"));
  const Step& step = s->steps[0];
  CHECK(step.kind->name == "poll");
  REQUIRE(step.request.body.has_value());
  CHECK(step.request.body->source() == "id={{instance}}");
  CHECK(step.request.timeout_ms == 2000);
  CHECK(step.retry.attempts == 4);
  CHECK(step.retry.initial_interval_ms == 250);
  CHECK(step.retry.backoff_factor == 3.0);
  CHECK(step.retry.max_interval_ms == 60000);
  CHECK(step.retry.on == RetryOn{false, false, true, true});
  CHECK(step.spec_as<Poll>().every_ms == 1000);
  CHECK(step.limit_ms == 0);
  CHECK(step.spec_as<Poll>().max_attempts == 20);
  CHECK(step.spec_as<Poll>().backoff_factor == 1.5);
  CHECK(step.spec_as<Poll>().max_interval_ms == 8000);
  REQUIRE(step.spec_as<Poll>().until.size() == 1);
  CHECK(step.spec_as<Poll>().until[0].regex != nullptr);
  CHECK(describe(step.spec_as<Poll>().until[0]) == "header x-state matches \"^done\"");
}

TEST_CASE("scenario parser: reads abort_if and retry.non_retryable") {
  std::shared_ptr<const Scenario> s = parse_ok(one_step(R"(
      {"request": {"url": "{{base}}"},
       "retry": {"attempts": 3, "non_retryable": [501, 409]},
       "abort_if": [{"status": 410}, {"json": "/error", "equals": "quota"}]})"));
  const Step& step = s->steps[0];
  CHECK(step.retry.non_retryable == std::vector<int>{501, 409});
  REQUIRE(step.abort_if.size() == 2);
  CHECK(describe(step.abort_if[0]) == "status is 410");
  CHECK(step.reads_json);  // the second reads the body as JSON
}

TEST_CASE("scenario parser: reads jitter for a poll, a retry and a sleep") {
  std::shared_ptr<const Scenario> s = parse_ok(R"({"name": "t", "vars": {"base": "http://h"},
      "steps": [{"request": {"url": "{{base}}"}, "retry": {"attempts": 2, "jitter": 0.2},
                 "poll": {"every": "5s", "timeout": "1m", "until": {"status": 200}, "jitter": 0.1}},
                {"sleep": "2s", "jitter": 0.5}, {"sleep": "1s"}]})");
  CHECK(s->steps[0].retry.jitter == 0.2);
  CHECK(s->steps[0].spec_as<Poll>().jitter == 0.1);
  CHECK(s->steps[1].spec_as<Sleep>().jitter == 0.5);
  CHECK(s->steps[2].spec_as<Sleep>().jitter == 0);
}

TEST_CASE("scenario parser: start_spread is read, and large runs spread over their first poll") {
  auto poll_every = [](const std::string& every, const std::string& extra) {
    return parse_ok(R"({"name": "t", "vars": {"base": "http://h"},)" + extra + R"( "steps": [
        {"request": {"url": "{{base}}"}},
        {"request": {"url": "{{base}}"}, "poll": {"every": ")" + every +
                    R"(", "timeout": "1h", "until": {"status": 200}}}]})");
  };
  auto s = poll_every("5s", "");
  CHECK_FALSE(s->start_spread_ms.has_value());
  CHECK(s->steps[1].repeat_ms == 5000);
  CHECK(start_spread_ms(*s, kSpreadFromInstances - 1) == 0);  // a small run starts at once
  CHECK(start_spread_ms(*s, kSpreadFromInstances) == 5000);
  CHECK(start_spread_ms(*poll_every("5m", ""), 100000) == kMaxDefaultSpreadMs);
  CHECK(start_spread_ms(*poll_every("5s", R"( "start_spread": "2s",)"), 10) == 2000);
  CHECK(start_spread_ms(*poll_every("5s", R"( "start_spread": "0s",)"), 100000) == 0);
  CHECK(start_spread_ms(*parse_ok(one_step(R"({"sleep": "1s"})")), 100000) == 0);  // no poll
  CHECK(parse_error(R"({"name": "t", "start_spread": 5, "steps": [{"sleep": "1s"}]})") ==
        R"(start_spread: expected a duration like "10s", got 5)");
}

}  // namespace
}  // namespace corral::scenario
