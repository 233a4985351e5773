// The WebSocket steps on the engine, against corral-target's WebSocket routes on the same loop:
// a conversation, the backlog, a server that closes or refuses, a wait that times out, a
// checkpoint that resumes at the step that opened the socket, and sockets closed with their
// instance.
#include "config/scenario/parse.h"
#include "shared/trace_context.h"
#include "tests/unit/worker/engine_fixture.h"

namespace corral::test::engine {
namespace {

// The scenario's steps, with {{ws}} the target's ws:// base.
json ws_scenario(const json& steps) { return {{"name", "ws"}, {"steps", steps}}; }

std::string ws_base(const Fixture& f) { return "ws" + f.base.substr(4); }

json open_step(const Fixture& f, const std::string& path, const json& more = json::object()) {
  json step = {{"ws", {{"url", ws_base(f) + path}}}};
  step.update(more);
  return step;
}

// The reason of instance 0's end, or "" before it ended.
std::string reason_of(const Fixture& f) {
  auto done = f.of("done");
  return done.empty() ? "" : done[0].value("reason", "");
}

std::string outcome_of(const Fixture& f) {
  auto done = f.of("done");
  return done.empty() ? "" : done[0].value("state", "");
}

TEST_CASE("ws steps: open, send JSON and text, receive what matches with captures, close") {
  Fixture f;
  f.start(
      ws_scenario({open_step(f, "/ws",
                             {{"ws", {{"url", ws_base(f) + "/ws"}, {"protocols", {"chat"}}}},
                              {"expect", {{{"status", 101}}}},
                              {"capture", {{"proto", {{"header", "Sec-WebSocket-Protocol"}}}}}}),
                   {{"ws_send", {{"json", {{"n", 1}, {"who", "{{proto}}"}}}}}},
                   {{"ws_receive", {{"until", {{{"json", "/n"}, {"equals", 1}}}}}},
                    {"capture", {{"who", {{"json", "/who"}}}}}},
                   {{"ws_send", {{"text", "hello {{who}}"}}}},
                   {{"ws_receive", {{"until", {{{"body_contains", "hello chat"}}}}}}},
                   {{"ws_close", {{"code", 1000}, {"reason", "done"}}}}}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  INFO(f.events.back().dump());
  CHECK(outcome_of(f) == "passed");
  CHECK(f.target->websockets() == 0);
  auto steps = f.of("step");
  REQUIRE(steps.size() == 6);
  CHECK(steps[2]["vars"]["who"] == "chat");
}

TEST_CASE("ws steps: the handshake carries the instance's traceparent, or the step's own") {
  Fixture f;
  const json echo = {{"capture", {{"tp", {{"header", "X-Echo-Traceparent"}}}}}};
  json own = open_step(f, "/ws", echo);
  own["ws"]["headers"] = {
      {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  own["ws"]["socket"] = "b";
  own["capture"] = {{"tp2", {{"header", "X-Echo-Traceparent"}}}};
  f.start(ws_scenario({open_step(f, "/ws", echo),
                       own,
                       {{"ws_close", json::object()}},
                       {{"ws_close", {{"socket", "b"}}}}}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  INFO(f.events.back().dump());
  REQUIRE(outcome_of(f) == "passed");
  json vars = json::object();  // as the steps captured them
  for (const json& step : f.of("step")) {
    if (step.contains("vars") && step["vars"].is_object()) vars.update(step["vars"]);
  }
  const std::string tp = vars.value("tp", "");
  CHECK(tp.size() == 55);
  CHECK(tp.substr(3, 32) == corral::instance_trace("r1", 0));
  CHECK(vars["tp2"] == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
}

TEST_CASE(
    "ws steps: messages that came before the wait are kept, and those that do not match "
    "are passed over") {
  Fixture f;
  f.start(ws_scenario({open_step(f, "/ws?push_ms=10"),
                       {{"sleep", "100ms"}},
                       {{"ws_receive", {{"until", {{{"json", "/seq"}, {"equals", 3}}}}}},
                        {"capture", {{"seq", {{"json", "/seq"}}}}}},
                       {{"ws_receive", {{"until", {{{"json", "/seq"}, {"gt", 5}}}}}},
                        {"capture", {{"later", {{"json", "/seq"}}}}}}}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(outcome_of(f) == "passed");
  auto steps = f.of("step");
  REQUIRE(steps.size() == 4);
  CHECK(steps[2]["vars"]["seq"] == 3);
  CHECK(steps[3]["vars"]["later"] == 6);
  // The instance ended with its socket open: the socket went with it.
  CHECK(f.run_until([&] { return f.target->websockets() == 0; }));
}

TEST_CASE("ws steps: permessage-deflate is offered, and messages are compressed when agreed") {
  Fixture f;
  const std::string big(5000, 'z');
  f.start(
      ws_scenario({open_step(f, "/ws?deflate=1",
                             {{"capture", {{"ext", {{"header", "Sec-WebSocket-Extensions"}}}}}}),
                   {{"ws_send", {{"json", {{"n", 1}, {"pad", big}}}}}},
                   {{"ws_receive", {{"until", {{{"json", "/pad"}, {"equals", big}}}}}},
                    {"capture", {{"n", {{"json", "/n"}}}}}}}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  INFO(f.events.back().dump());
  CHECK(outcome_of(f) == "passed");
  auto steps = f.of("step");
  REQUIRE(steps.size() == 3);
  CHECK(steps[0]["vars"]["ext"] ==
        "permessage-deflate; server_no_context_takeover; client_no_context_takeover");
  CHECK(steps[2]["vars"]["n"] == 1);
}

TEST_CASE("ws steps: ping_every pings the server while the socket is open, and stops after") {
  Fixture f;
  f.start(ws_scenario(
      {open_step(f, "/ws", {{"ws", {{"url", ws_base(f) + "/ws"}, {"ping_every", "50ms"}}}}),
       {{"ws_receive", {{"until", {{{"body_contains", "never"}}}}}}, {"timeout", "3s"}}}));
  REQUIRE(f.run_until([&] { return f.target->ws_pings() >= 3; }));
  CHECK(f.done_count() == 0);  // while the step waits on the socket
  REQUIRE(f.run_until([&] { return f.done_count() == 1 && f.target->websockets() == 0; }));
  const uint64_t pings = f.target->ws_pings();
  f.run_until([] { return false; }, 200);
  CHECK(f.target->ws_pings() == pings);  // none once the socket closed with its instance
}

TEST_CASE("ws steps: a wait ends with the reason: a timeout, a server's close, a refusal") {
  Fixture f;
  SECTION("nothing matches in time") {
    f.start(ws_scenario(
        {open_step(f, "/ws"),
         {{"ws_receive", {{"until", {{{"body_contains", "never"}}}}}}, {"timeout", "200ms"}}}));
    REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
    CHECK(reason_of(f) == "ws_receive timed out after 200ms: no message matched");
  }
  SECTION("an answered wait leaves no timeout behind; a later wait times out on its own") {
    f.start(ws_scenario(
        {open_step(f, "/ws"),
         {{"ws_send", {{"text", "a"}}}},
         {{"ws_receive", {{"until", {{{"body_contains", "a"}}}}}}, {"timeout", "300ms"}},
         {{"sleep", "400ms"}},  // past the first wait's deadline
         {{"ws_send", {{"text", "b"}}}},
         {{"ws_receive", {{"until", {{{"body_contains", "never"}}}}}}, {"timeout", "200ms"}}}));
    REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
    CHECK(reason_of(f) == "ws_receive timed out after 200ms: no message matched");
    auto steps = f.of("step");
    REQUIRE(steps.size() == 6);
    CHECK(steps[4]["state"] == "passed");  // the second send: the sleep was not cut short
  }
  SECTION("the server closes while the step waits") {
    f.start(ws_scenario({open_step(f, "/ws?close_after=1&close_code=1001"),
                         {{"ws_send", {{"text", "x"}}}},
                         {{"ws_receive", {{"until", {{{"body_contains", "never"}}}}}}}}));
    REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
    CHECK(reason_of(f) ==
          "socket \"ws\" closed by the server with 1001 \"enough\" while waiting for a message");
  }
  SECTION("the server does not switch") {
    f.start(ws_scenario(json::array({open_step(f, "/ws/status?code=503")})));
    REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
    CHECK(reason_of(f) == "ws " + ws_base(f) +
                              "/ws/status?code=503: the server answered 503, not 101 Switching "
                              "Protocols (1 tries)");
  }
  SECTION("an opening answered 503 is tried again as retry says, then fails") {
    f.start(ws_scenario(json::array({open_step(
        f, "/ws/status?code=503",
        {{"retry", {{"attempts", 3}, {"initial_interval", "10ms"}, {"backoff", 1}}}})})));
    REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
    CHECK_THAT(reason_of(f), Catch::EndsWith("not 101 Switching Protocols (3 tries)"));
    CHECK(f.target->requests() == 3);
  }
  SECTION("a refused opening is not tried again when retry.on leaves out transport errors") {
    f.start(ws_scenario(json::array(
        {{{"ws", {{"url", "ws://127.0.0.1:1/ws"}}},
          {"retry",
           {{"attempts", 3}, {"initial_interval", "10ms"}, {"on", json::array({"5xx"})}}}}})));
    REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
    CHECK_THAT(reason_of(f), Catch::EndsWith("(1 tries)"));
  }
  SECTION("abort_if on a message") {
    f.start(ws_scenario({open_step(f, "/ws"),
                         {{"ws_send", {{"json", {{"error", "boom"}}}}}},
                         {{"ws_receive", {{"until", {{{"json", "/ok"}, {"equals", true}}}}}},
                          {"abort_if", {{{"json", "/error"}, {"exists", true}}}}}}));
    REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
    CHECK_THAT(reason_of(f), Catch::StartsWith("abort_if held: "));
  }
  CHECK(outcome_of(f) == "failed");
}

TEST_CASE("ws steps: a checkpoint at a step on a socket resumes at the step that opened it") {
  Fixture f;
  Checkpoint cp;
  cp.step = 2;  // the ws_receive: its socket was on another worker
  cp.step_started_ms = unix_ms_now();
  f.start(ws_scenario({open_step(f, "/ws"),
                       {{"ws_send", {{"text", "again"}}}},
                       {{"ws_receive", {{"until", {{{"body_contains", "again"}}}}}}}}),
          1, cp);
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(outcome_of(f) == "passed");
  auto steps = f.of("step");
  REQUIRE(steps.size() == 3);
  CHECK(steps[0]["step"] == 0);
}

TEST_CASE(
    "ws steps: a scenario is refused where a socket is used before it is opened, or a "
    "URL is not ws") {
  auto error_of = [](const json& steps) {
    auto s = scenario::parse_scenario(ws_scenario(steps));
    return s ? std::string() : s.status().message();
  };
  CHECK(error_of({{{"ws_send", {{"text", "x"}}}}}) ==
        "steps[0].ws_send: no earlier \"ws\" step opens a socket called \"ws\"");
  CHECK(error_of({{{"ws", {{"url", "ws://h/a"}, {"socket", "a"}}}},
                  {{"ws_receive", {{"socket", "b"}}}}}) ==
        "steps[1].ws_receive: no earlier \"ws\" step opens a socket called \"b\"");
  CHECK(error_of({{{"ws", {{"url", "http://h/a"}}}}}) ==
        "steps[0].ws.url: expected a ws:// or wss:// URL, got \"http://h/a\"");
  CHECK(error_of({{{"ws", {{"url", "ws://h/a"}}}}, {{"ws_send", {{"text", "x"}, {"json", 1}}}}}) ==
        "steps[1].ws_send: needs exactly one of \"text\", \"json\" and \"binary_base64\"");
  CHECK(error_of({{{"ws", {{"url", "ws://h/a"}}}}, {{"ws_close", {{"code", 1006}}}}}) ==
        "steps[1].ws_close.code: expected 1000 or an application's code, 3000 to 4999");
  CHECK(error_of({{{"ws", {{"url", "ws://h/a"}, {"deflate", "yes"}}}}}) ==
        "steps[0].ws.deflate: expected true or false, got \"yes\"");
  CHECK(error_of({{{"request", {{"url", "ws://h/a"}}}}}) ==
        "steps[0].request.url: expected an http:// or https:// URL, got \"ws://h/a\" (a WebSocket "
        "is opened by a \"ws\" step: docs/scenarios.md, \"WebSocket\")");
}

}  // namespace
}  // namespace corral::test::engine
