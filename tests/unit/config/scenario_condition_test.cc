// Conditions and captures evaluated against responses.
#include <catch2/catch.hpp>
#include <vector>

#include "config/scenario/parse.h"

namespace corral::scenario {
namespace {

using nlohmann::json;

// Conditions are built the way users write them: through the parser.
std::vector<Condition> conditions(const std::string& list) {
  auto doc = json::parse(R"({"name": "t", "steps": [{"request": {"url": "http://h"}, "expect": )" +
                         list + "}]}");
  Result<std::shared_ptr<const Scenario>> s = parse_scenario(doc);
  INFO((s ? "" : s.status().message()));
  REQUIRE(s.is_ok());
  return (*s)->steps[0].expect;
}

Condition condition(const std::string& text) { return conditions("[" + text + "]").at(0); }

// A condition as an exec step's `expect` holds it (exit_code is for commands only).
Condition exec_condition(const std::string& text) {
  auto doc = json::parse(R"({"name": "t", "steps": [{"exec": {"argv": ["true"]}, "expect": )" +
                         text + "}]}");
  Result<std::shared_ptr<const Scenario>> s = parse_scenario(doc);
  INFO((s ? "" : s.status().message()));
  REQUIRE(s.is_ok());
  return (*s)->steps[0].expect.at(0);
}

Capture capture_spec(const std::string& text) {
  auto doc =
      json::parse(R"({"name": "t", "steps": [{"request": {"url": "http://h"}, "capture": {"v": )" +
                  text + "}}]}");
  Result<std::shared_ptr<const Scenario>> s = parse_scenario(doc);
  REQUIRE(s.is_ok());
  return (*s)->steps[0].captures.at(0);
}

const std::vector<Header> kHeaders = {
    {"Content-Type", "application/json"}, {"X-Count", "12"}, {"Location", "/jobs/7"}};
const std::string kBody =
    R"({"status": "running", "n": 7, "id": "j-1", "tags": ["a", "b"], "nested": {"x": null}})";
const json kJson = json::parse(kBody);

ResponseView json_response() { return {200, kHeaders, kBody, &kJson, {}}; }

struct Case {
  const char* condition;
  bool held;
  const char* explanation;
};

void check_cases(const std::vector<Case>& cases, const ResponseView& response) {
  for (const Case& c : cases) {
    CAPTURE(c.condition);
    ConditionResult r = evaluate(condition(c.condition), response);
    CHECK(r.held == c.held);
    CHECK(r.explanation == c.explanation);
  }
}

TEST_CASE("scenario conditions: status equals one code or one of several") {
  check_cases(
      {
          {R"({"status": 200})", true, "status was 200"},
          {R"({"status": 201})", false, "status was 200, expected 201"},
          {R"({"status": [200, 201]})", true, "status was 200"},
          {R"({"status": [201, 202]})", false, "status was 200, expected one of 201, 202"},
      },
      json_response());
  ConditionResult r = evaluate(condition(R"({"status": 200})"), {500, {}, "", nullptr, {}});
  CHECK_FALSE(r.held);
  CHECK(r.explanation == "status was 500, expected 200");
}

TEST_CASE("scenario conditions: exit_code holds on a command's result, and never on a response") {
  ResponseView command{0, {}, "out", nullptr, 3};
  CHECK(evaluate(exec_condition(R"({"exit_code": 3})"), command).held);
  CHECK(evaluate(exec_condition(R"({"exit_code": [0, 3]})"), command).held);
  ConditionResult r = evaluate(exec_condition(R"({"exit_code": 0})"), command);
  CHECK_FALSE(r.held);
  CHECK(r.explanation == "exit code was 3, expected 0");
  CHECK(describe(exec_condition(R"({"exit_code": 0})")) == "exit code is 0");
  r = evaluate(exec_condition(R"({"exit_code": 0})"), json_response());
  CHECK_FALSE(r.held);
  CHECK(r.explanation == "exit code does not exist (not a command's result), expected 0");
}

TEST_CASE("scenario conditions: each operator on a JSON pointer holds or explains why not") {
  check_cases(
      {
          {R"({"json": "/status", "equals": "running"})", true, R"(/status was "running")"},
          {R"({"json": "/status", "equals": "done"})", false,
           R"(/status was "running", expected "done")"},
          {R"({"json": "/n", "equals": 7.0})", true, "/n was 7"},
          {R"({"json": "/n", "equals": "7"})", false, R"(/n was 7, expected "7")"},
          {R"({"json": "/tags", "equals": ["a", "b"]})", true, R"(/tags was ["a","b"])"},
          {R"({"json": "/status", "not_equals": "done"})", true, R"(/status was "running")"},
          {R"({"json": "/status", "not_equals": "running"})", false,
           R"(/status was "running", expected anything but "running")"},
          {R"({"json": "/id", "exists": true})", true, R"(/id was "j-1")"},
          {R"({"json": "/nested/x", "exists": true})", true, "/nested/x was null"},
          {R"({"json": "/missing", "exists": true})", false,
           "/missing does not exist, expected it to exist"},
          {R"({"json": "/missing", "exists": false})", true, "/missing does not exist"},
          {R"({"json": "/id", "exists": false})", false,
           R"(/id was "j-1", expected it not to exist)"},
          {R"({"json": "/status", "in": ["done", "running"]})", true, R"(/status was "running")"},
          {R"({"json": "/status", "in": ["done", "failed"]})", false,
           R"(/status was "running", expected one of "done", "failed")"},
          {R"({"json": "/n", "lt": 10})", true, "/n was 7"},
          {R"({"json": "/n", "lt": 5})", false, "/n was 7, expected less than 5"},
          {R"({"json": "/n", "lt": 7})", false, "/n was 7, expected less than 7"},
          {R"({"json": "/n", "gt": 6.5})", true, "/n was 7"},
          {R"({"json": "/n", "gt": 7})", false, "/n was 7, expected greater than 7"},
          {R"({"json": "/status", "lt": 5})", false,
           R"(/status was "running", expected a number less than 5)"},
          {R"({"json": "/status", "matches": "^run"})", true, R"(/status was "running")"},
          {R"({"json": "/status", "matches": "^done$"})", false,
           R"(/status was "running", expected to match "^done$")"},
          {R"({"json": "/n", "matches": "^7$"})", true, "/n was 7"},
          {R"({"json": "", "exists": true})", true,
           R"(the body was {"id":"j-1","n":7,"nested":{"x":null},"status":"running","tags":["a","b"]})"},
      },
      json_response());
}

TEST_CASE("scenario conditions: a missing JSON path fails every operator but exists false") {
  check_cases(
      {
          {R"({"json": "/missing", "equals": "x"})", false,
           R"(/missing does not exist, expected "x")"},
          {R"({"json": "/missing", "not_equals": "x"})", false,
           R"(/missing does not exist, expected anything but "x")"},
          {R"({"json": "/missing", "lt": 1})", false,
           "/missing does not exist, expected less than 1"},
          {R"({"json": "/tags/1", "equals": "b"})", true, R"(/tags/1 was "b")"},
          {R"({"json": "/tags/5", "exists": false})", true, "/tags/5 does not exist"},
          {R"({"json": "/tags/-", "exists": true})", false,
           "/tags/- does not exist, expected it to exist"},
          {R"({"json": "/tags/99999999999999999999999", "exists": false})", true,
           "/tags/99999999999999999999999 does not exist"},
          {R"({"json": "/status/deeper", "exists": false})", true, "/status/deeper does not exist"},
      },
      json_response());
  ResponseView not_json{200, {}, "<html>", nullptr, {}};
  ConditionResult r = evaluate(condition(R"({"json": "/status", "equals": "done"})"), not_json);
  CHECK_FALSE(r.held);
  CHECK(r.explanation == R"(/status does not exist (the body is not JSON), expected "done")");
}

TEST_CASE("scenario conditions: headers are matched by name case-insensitively and read as text") {
  check_cases(
      {
          {R"({"header": "content-type", "matches": "json"})", true,
           R"(header content-type was "application/json")"},
          {R"({"header": "x-count", "equals": "12"})", true, R"(header x-count was "12")"},
          {R"({"header": "x-count", "equals": 12})", true, R"(header x-count was "12")"},
          {R"({"header": "X-COUNT", "equals": "13"})", false,
           R"(header X-COUNT was "12", expected "13")"},
          {R"({"header": "x-count", "gt": 10})", true, R"(header x-count was "12")"},
          {R"({"header": "x-count", "lt": 10})", false,
           R"(header x-count was "12", expected less than 10)"},
          {R"({"header": "location", "lt": 5})", false,
           R"(header location was "/jobs/7", expected a number less than 5)"},
          {R"({"header": "x-none", "exists": true})", false,
           "header x-none does not exist, expected it to exist"},
          {R"({"header": "x-none", "exists": false})", true, "header x-none does not exist"},
          {R"({"header": "location", "in": ["/jobs/6", "/jobs/7"]})", true,
           R"(header location was "/jobs/7")"},
      },
      json_response());
}

TEST_CASE("scenario conditions: body_contains looks for text anywhere in the body") {
  ResponseView text{200, {}, "hello world", nullptr, {}};
  check_cases(
      {
          {R"({"body_contains": "world"})", true, R"(body was "hello world")"},
          {R"({"body_contains": "bye"})", false,
           R"(body was "hello world", expected to contain "bye")"},
      },
      text);
  std::string big(10000, 'x');
  ConditionResult r = evaluate(condition(R"({"body_contains": "y"})"), {200, {}, big, nullptr, {}});
  CHECK_FALSE(r.held);
  CHECK(r.explanation == "body was \"" + std::string(119, 'x') + "..., expected to contain \"y\"");
}

TEST_CASE("scenario conditions: matches uses RE2 partial matching in linear time") {
  // (a+)+$ backtracks exponentially in PCRE-style engines; RE2 answers at once.
  std::string hostile(100000, 'a');
  hostile += 'b';
  ResponseView r{200, {}, hostile, nullptr, {}};
  CHECK_FALSE(evaluate(condition(R"({"header": "none", "matches": "x"})"), r).held);
  Condition c = condition(R"({"body_contains": "b"})");
  CHECK(evaluate(c, r).held);
  json doc = {{"s", hostile}};
  ResponseView j{200, {}, "", &doc, {}};
  CHECK_FALSE(evaluate(condition(R"({"json": "/s", "matches": "^(a+)+$"})"), j).held);
  CHECK(evaluate(condition(R"({"json": "/s", "matches": "a{3}b"})"), j).held);
  CHECK(evaluate(condition(R"({"json": "/s", "matches": "(?i)A+B$"})"), j).held);
}

TEST_CASE("scenario conditions: all_hold reports the first failure, first_holding the first hit") {
  std::vector<Condition> list = conditions(
      R"([{"status": 200}, {"json": "/status", "equals": "done"}, {"json": "/n", "gt": 100}])");
  ConditionResult all = all_hold(list, json_response());
  CHECK_FALSE(all.held);
  CHECK(all.explanation == R"(/status was "running", expected "done")");
  CHECK(all_hold(std::span(list).first(1), json_response()).held);

  std::optional<ConditionResult> hit = first_holding(std::span(list).subspan(1), json_response());
  CHECK_FALSE(hit.has_value());
  hit = first_holding(list, json_response());
  REQUIRE(hit.has_value());
  CHECK(hit->explanation == "status was 200");
}

TEST_CASE("scenario conditions: describe renders a condition as users wrote it") {
  CHECK(describe(condition(R"({"status": 200})")) == "status is 200");
  CHECK(describe(condition(R"({"status": [200, 201]})")) == "status is one of 200, 201");
  CHECK(describe(condition(R"({"json": "/a", "not_equals": 1})")) == "/a does not equal 1");
  CHECK(describe(condition(R"({"json": "/a", "exists": false})")) == "/a does not exist");
  CHECK(describe(condition(R"({"header": "h", "lt": 3})")) == "header h is less than 3");
  CHECK(describe(condition(R"({"body_contains": "ok"})")) == "body contains \"ok\"");
}

TEST_CASE("scenario captures: take JSON values, headers, status and body") {
  Result<json> id = capture(capture_spec(R"({"json": "/id"})"), json_response());
  REQUIRE(id.is_ok());
  CHECK(*id == "j-1");
  Result<json> tags = capture(capture_spec(R"({"json": "/tags"})"), json_response());
  REQUIRE(tags.is_ok());
  CHECK(*tags == json{"a", "b"});
  Result<json> loc = capture(capture_spec(R"({"header": "LOCATION"})"), json_response());
  REQUIRE(loc.is_ok());
  CHECK(*loc == "/jobs/7");
  Result<json> status = capture(capture_spec(R"({"status": true})"), json_response());
  REQUIRE(status.is_ok());
  CHECK(*status == 200);
  Result<json> body = capture(capture_spec(R"({"body": true})"), json_response());
  REQUIRE(body.is_ok());
  CHECK(*body == kBody);
}

TEST_CASE("scenario captures: a capture that finds nothing fails naming what it looked for") {
  struct FailCase {
    const char* spec;
    ResponseView response;
    const char* error;
  };
  const FailCase cases[] = {
      {R"({"json": "/missing"})", json_response(),
       R"(capture "v": /missing not found in response body)"},
      {R"({"json": "/tags/2"})", json_response(),
       R"(capture "v": /tags/2 not found in response body)"},
      {R"({"json": "/id"})",
       {200, {}, "<html>", nullptr, {}},
       R"(capture "v": /id not found: the response body is not JSON)"},
      {R"({"header": "X-Job"})", json_response(),
       R"(capture "v": header X-Job not found in response)"},
  };
  for (const FailCase& c : cases) {
    CAPTURE(c.spec);
    Result<json> r = capture(capture_spec(c.spec), c.response);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kNotFound);
    CHECK(r.status().message() == c.error);
  }
}

}  // namespace
}  // namespace corral::scenario
