// W3C trace context: the traceparent header of every request, one trace per instance.
#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include "config/scenario/parse.h"
#include "shared/trace_context.h"
#include "tests/unit/worker/engine_fixture.h"

using corral::instance_trace;
using corral::span_id;
using corral::trace_id;
using corral::traceparent;
using corral::test::engine::Fixture;
using nlohmann::json;

namespace {

// Two steps that each read back the traceparent the echo saw.
json echo_twice(bool trace_context = true) {
  json s = json::parse(R"({"name": "traced", "steps": [
      {"request": {"url": "{{base}}/echo"}, "capture": {"first": {"json": "/headers/traceparent"}}},
      {"request": {"url": "{{base}}/echo"}, "capture": {"second": {"json": "/headers/traceparent"}}}]})");
  if (!trace_context) s["trace_context"] = false;
  return s;
}

// The trace id of a traceparent value, after checking its form.
std::string trace_of(const json& value) {
  REQUIRE(value.is_string());
  const std::string text = value;
  CHECK(std::regex_match(text, std::regex("00-[0-9a-f]{32}-[0-9a-f]{16}-01")));
  CHECK(text.substr(3, 32) != std::string(32, '0'));
  CHECK(text.substr(36, 16) != std::string(16, '0'));
  return text.substr(3, 32);
}

}  // namespace

TEST_CASE("trace context: the header's form, and ids that are never zero") {
  CHECK(traceparent({0x0af7651916cd43ddULL, 0x8448eb211c80319cULL}, 0xb7ad6b7169203331ULL) ==
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  std::set<uint64_t> spans;
  for (uint64_t i = 0; i < 1000; ++i) spans.insert(span_id(42, i));
  CHECK(spans.size() == 1000);
  CHECK(spans.count(0) == 0);
  const auto a = trace_id(7, 1), b = trace_id(7, 2), c = trace_id(8, 1);
  CHECK((a.hi != b.hi || a.lo != b.lo));
  CHECK((a.hi != c.hi || a.lo != c.lo));
  CHECK((trace_id(7, 1).hi == a.hi && trace_id(7, 1).lo == a.lo));  // derived, not drawn
}

TEST_CASE("trace context: an instance's requests share a trace, each its own span") {
  Fixture f;
  f.start(echo_twice(), 2);
  REQUIRE(f.run_until([&] { return f.done_count() == 2; }));
  std::set<std::string> traces, spans;
  for (uint32_t i = 0; i < 2; ++i) {
    auto steps = f.of("step", i);
    REQUIRE(steps.size() == 2);
    const json& first = steps[1]["vars"]["first"];
    const json& second = steps[1]["vars"]["second"];
    CHECK(trace_of(first) == trace_of(second));
    CHECK(trace_of(first) == instance_trace("r1", i));  // what the master and the CLI show
    traces.insert(trace_of(first));
    spans.insert(first.get<std::string>().substr(36, 16));
    spans.insert(second.get<std::string>().substr(36, 16));
  }
  CHECK(traces.size() == 2);  // a trace per instance
  CHECK(spans.size() == 4);   // a span per request
}

TEST_CASE("trace context: an instance resumed on another worker keeps its trace") {
  std::string before, after;
  for (std::string* trace : {&before, &after}) {
    Fixture f;  // a worker of its own, with its own salt
    f.start(echo_twice(), 1);
    REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
    *trace = trace_of(f.of("step", 0)[0]["vars"]["first"]);
  }
  CHECK(before == after);
}

TEST_CASE("trace context: a step's own traceparent wins, and trace_context false sends none") {
  Fixture f;
  json s = echo_twice();
  s["steps"][0]["request"]["headers"] = {
      {"TraceParent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  f.start(s, 1);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("step", 0)[0]["vars"]["first"] ==
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");

  Fixture off;
  json quiet = json::parse(R"({"name": "untraced", "trace_context": false, "steps": [
      {"request": {"url": "{{base}}/echo"},
       "expect": [{"json": "/headers/traceparent", "exists": false}]}]})");
  off.start(quiet, 1);
  REQUIRE(off.run_until([&] { return off.done_count() == 1; }));
  CHECK(off.of("done", 0)[0]["state"] == "passed");

  auto wrong = corral::scenario::parse_scenario(json::parse(
      R"({"name": "x", "trace_context": "no", "steps": [{"request": {"url": "http://a/"}}]})"));
  REQUIRE_FALSE(wrong);
  CHECK_THAT(wrong.status().message(), Catch::StartsWith("trace_context: expected"));
}
