// The callback step on the engine: {{callback_url}} names the instance and step in a token the
// key proves, a call passes the step with its body judged and captured, a call that comes early
// waits for the instance, a checkpoint carries it to another worker, and the deadline and the
// heartbeat fail a step nobody calls.
#include "shared/callback/token.h"
#include "tests/unit/worker/engine_fixture.h"

namespace corral::test::engine {
namespace {

const std::string kKey(64, 'a');

// Step 0 prints the callback URL (captured as "url"), step 1 sleeps `sleep`, step 2 waits for
// the call, step 3 follows it.
json callback_scenario(const json& callback_step, const std::string& sleep = "0s") {
  json wait = {{"callback", {{"timeout", "5s"}}}};
  wait.update(callback_step);
  return {{"name", "callback"},
          {"steps",
           {{{"exec", {{"argv", {"echo", "{{callback_url}}"}}}}, {"capture", {{"url", {{"body", true}}}}}},
            {{"sleep", sleep}},
            wait,
            {{"sleep", "0s"}}}}};
}

// The event of step `step` of instance `i`.
json step_event(const Fixture& f, uint32_t i, int step) {
  for (const json& e : f.of("step", i)) {
    if (e["step"] == step) return e;
  }
  return nullptr;
}

json status_capture() { return {{"capture", {{"status", {{"json", "/status"}}}}}}; }

// The token at the end of the URL the instance captured in its first step.
std::string captured_token(const Fixture& f, uint32_t i) {
  std::string url = f.of("step", i).at(0)["vars"]["url"];
  while (!url.empty() && url.back() == '\n') url.pop_back();
  return url.substr(url.rfind('/') + 1);
}

TEST_CASE("callback token: names its run, instance and step, and only its key makes it") {
  std::string t = callback::token(kKey, "r12-c034", 7, 2);
  auto a = callback::check(kKey, t);
  REQUIRE(a.has_value());
  CHECK(a->run == "r12-c034");
  CHECK(a->index == 7);
  CHECK(a->step == 2);
  CHECK(t.size() == std::string("r12-c034.7.2.").size() + 32);  // 128 bits of mac
  CHECK_FALSE(callback::check(std::string(64, 'b'), t));           // another daemon's key
  std::string tampered = t;
  tampered[tampered.size() - 1] = tampered.back() == '0' ? '1' : '0';
  CHECK_FALSE(callback::check(kKey, tampered));
  std::string other_step = callback::token(kKey, "r12-c034", 7, 3);
  CHECK_FALSE(callback::check(kKey, "r12-c034.7.2." + other_step.substr(other_step.size() - 32)));
  for (const char* bad : {"", ".", "abc", "r1.1.1.", "r1.x.1.0123456789abcdef0123456789abcdef"}) {
    CHECK_FALSE(callback::check(kKey, bad));
  }
  CHECK(callback::make_key()->size() == 64);
  CHECK(*callback::make_key() != *callback::make_key());
}

TEST_CASE("callback step: the call passes it, its body judged and captured for the next step") {
  Fixture f;
  f.engine->set_callbacks("http://127.0.0.1:7070/", kKey);
  json step = status_capture();
  step["expect"] = json::array({{{"json", "/status"}, {"equals", "done"}}});
  f.start(callback_scenario(step), 2);
  REQUIRE(f.run_until([&] { return f.of("step", 0).size() == 2 && f.of("step", 1).size() == 2; }));
  for (uint32_t i = 0; i < 2; ++i) {
    std::string url = f.of("step", i).at(0)["vars"]["url"];
    CHECK(url.rfind("http://127.0.0.1:7070/callbacks/", 0) == 0);
    auto a = callback::check(kKey, captured_token(f, i));
    REQUIRE(a.has_value());
    CHECK(a->run == "r1");
    CHECK(a->index == i);
    CHECK(a->step == 2);
  }
  CHECK_FALSE(f.run_until([&] { return f.done_count() > 0; }, 200));  // nobody called yet
  f.engine->callback("r1", 1, 2, json{{"status", "done"}});
  REQUIRE(f.run_until([&] { return f.of("done", 1).size() == 1; }));
  CHECK(f.of("done", 1)[0]["state"] == "passed");
  CHECK(step_event(f, 1, 2)["vars"]["status"] == "done");  // the callback step's capture
  CHECK(f.of("done", 0).empty());  // the other one still waits for its own call
  f.engine->callback("r1", 0, 2, json{{"status", "broken"}});
  REQUIRE(f.run_until([&] { return f.of("done", 0).size() == 1; }));
  CHECK(f.of("done", 0)[0]["state"] == "failed");
  CHECK(f.of("done", 0)[0]["reason"].get<std::string>().find("expect:") != std::string::npos);
}

TEST_CASE("callback step: a call that comes before the instance reaches the step is kept for it") {
  Fixture f;
  f.engine->set_callbacks("http://127.0.0.1:7070", kKey);
  f.start(callback_scenario(status_capture(), "300ms"));
  REQUIRE(f.run_until([&] { return f.of("step", 0).size() == 1; }));
  f.engine->callback("r1", 0, 2, json{{"status", "early"}});  // while it sleeps in step 1
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("done", 0)[0]["state"] == "passed");
  CHECK(step_event(f, 0, 2)["vars"]["status"] == "early");
}

TEST_CASE("callback step: its checkpoint carries an early call to another worker") {
  Fixture f;
  f.engine->set_callbacks("http://127.0.0.1:7070", kKey);
  f.start(callback_scenario(status_capture(), "10s"));
  REQUIRE(f.run_until([&] { return f.of("step", 0).size() == 1; }));
  f.engine->callback("r1", 0, 2, json{{"status", "moved"}});
  json taken = f.engine->take_all();
  REQUIRE(taken["r1"]["0"]["callback"]["body"]["status"] == "moved");
  auto cp = ipc::checkpoint_from_json(taken["r1"]["0"]);
  REQUIRE(cp.is_ok());
  cp->step = 2;  // as if its sleep had ended where it went
  cp->step_started_ms = 0;
  REQUIRE(f.engine->start("r1", 0, *cp).is_ok());
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("done", 0)[0]["state"] == "passed");
  CHECK(step_event(f, 0, 2)["vars"]["status"] == "moved");
}

TEST_CASE("callback step: nobody calls, and it fails at its timeout naming it") {
  Fixture f;
  f.engine->set_callbacks("http://127.0.0.1:7070", kKey);
  f.start(callback_scenario({{"callback", {{"timeout", "150ms"}}}}));
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done", 0)[0];
  CHECK(done["state"] == "failed");
  CHECK(done["reason"] == "callback not called within 150ms");
}

TEST_CASE("callback step: with a heartbeat, pings keep it waiting and silence fails it") {
  Fixture f;
  f.engine->set_callbacks("http://127.0.0.1:7070", kKey);
  f.start(callback_scenario({{"callback", {{"timeout", "10s"}, {"heartbeat", "300ms"}}}}));
  REQUIRE(f.run_until([&] { return f.of("step", 0).size() == 2; }));  // at the callback step
  const int64_t pinged_until = unix_ms_now() + 900;
  while (unix_ms_now() < pinged_until) {
    f.engine->callback("r1", 0, 2, std::nullopt);
    CHECK_FALSE(f.run_until([&] { return f.done_count() == 1; }, 100));
  }
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  auto done = f.of("done", 0)[0];
  CHECK(done["state"] == "failed");
  CHECK(done["reason"] == "callback: no heartbeat within 300ms");
  CHECK(done["ended_ms"].get<int64_t>() >= pinged_until);
}

TEST_CASE("callback step: calls for unknown instances or steps it passed change nothing") {
  Fixture f;
  f.engine->set_callbacks("http://127.0.0.1:7070", kKey);
  f.start(callback_scenario(status_capture()));
  REQUIRE(f.run_until([&] { return f.of("step", 0).size() == 2; }));  // at the callback step
  f.engine->callback("r1", 5, 2, json{{"status", "x"}});
  f.engine->callback("nope", 0, 2, json{{"status", "x"}});
  f.engine->callback("r1", 0, 1, json{{"status", "x"}});  // a step it passed
  CHECK_FALSE(f.run_until([&] { return f.done_count() == 1; }, 200));
  f.engine->callback("r1", 0, 2, json{{"status", "ok"}});
  REQUIRE(f.run_until([&] { return f.done_count() == 1; }));
  CHECK(f.of("done", 0)[0]["state"] == "passed");
}

}  // namespace
}  // namespace corral::test::engine
