// An instance's checkpoint: the JSON it travels as between master and workers and rests as in
// the journal. Both sides decode it strictly.
#include <catch2/catch.hpp>

#include "shared/ipc/checkpoint.h"

using corral::Code;
using corral::ipc::append_json;
using corral::ipc::Checkpoint;
using corral::ipc::checkpoint_from_json;
using corral::ipc::to_json;
using nlohmann::json;

namespace {

Checkpoint full_checkpoint() {
  Checkpoint c;
  c.step = 3;
  c.attempts = 7;
  c.tries = 2;
  c.step_started_ms = 1'700'000'000'123;
  c.deadline_ms = 1'700'000'600'123;
  c.started_ms = 1'699'999'999'001;
  c.wake_ms = 1'700'000'001'123;
  c.vars = {{"job", "42"}, {"n", 2}, {"nested", {{"k", json::array({1, 2})}}}};
  return c;
}

std::string error_of(const json& j) {
  auto c = checkpoint_from_json(j, "resume.4");
  REQUIRE_FALSE(c.is_ok());
  CHECK(c.status().code() == Code::kProtocol);
  return c.status().message();
}

}  // namespace

TEST_CASE("checkpoint: to_json writes every field and checkpoint_from_json reads it back") {
  const Checkpoint c = full_checkpoint();
  const json j = to_json(c);
  CHECK(j == json{{"step", 3},
                  {"attempts", 7},
                  {"tries", 2},
                  {"step_started_ms", 1'700'000'000'123},
                  {"deadline_ms", 1'700'000'600'123},
                  {"started_ms", 1'699'999'999'001},
                  {"wake_ms", 1'700'000'001'123},
                  {"vars", c.vars}});
  // Through text too, as it travels in a frame or a journal row.
  auto back = checkpoint_from_json(json::parse(j.dump()));
  REQUIRE(back.is_ok());
  CHECK(*back == c);
}

TEST_CASE("checkpoint: missing fields keep their defaults, and empty vars are left out") {
  auto some = checkpoint_from_json({{"step", 2}, {"started_ms", 500}});
  REQUIRE(some.is_ok());
  Checkpoint expected;
  expected.step = 2;
  expected.started_ms = 500;
  CHECK(*some == expected);
  Checkpoint empty_vars = full_checkpoint();
  empty_vars.vars = json::object();
  CHECK_FALSE(to_json(empty_vars).contains("vars"));
  CHECK_FALSE(to_json(Checkpoint{}).contains("wake_ms"));  // an instance due at once
  CHECK(*checkpoint_from_json(to_json(Checkpoint{})) == Checkpoint{});
}

// Found by fuzz_ipc_payloads (corpus/fuzz_ipc_payloads/regress-empty-vars): {} was kept as {},
// written as nothing, and read back as null, so a checkpoint changed on its way round.
TEST_CASE("checkpoint: empty vars read as none, so a checkpoint survives a round trip") {
  auto c = checkpoint_from_json({{"step", 1}, {"vars", json::object()}});
  REQUIRE(c.is_ok());
  CHECK(c->vars.is_null());
  auto back = checkpoint_from_json(json::parse(to_json(*c).dump()));
  REQUIRE(back.is_ok());
  CHECK(*back == *c);
}

TEST_CASE("checkpoint: the deadline journaled by earlier versions is read as deadline_ms") {
  auto c = checkpoint_from_json({{"step", 1}, {"poll_deadline_ms", 900}});
  REQUIRE(c.is_ok());
  CHECK(c->deadline_ms == 900);
}

TEST_CASE("checkpoint: a field of the wrong type or range is a protocol error naming it") {
  CHECK(error_of({{"step", "two"}}) ==
        "resume.4.step: expected an unsigned 32-bit integer, got \"two\"");
  CHECK(error_of({{"attempts", true}}) ==
        "resume.4.attempts: expected an unsigned 32-bit integer, got true");
  CHECK(error_of({{"tries", -1}}) == "resume.4.tries: expected an unsigned 32-bit integer, got -1");
  CHECK(error_of({{"step", 4294967296}}) ==
        "resume.4.step: expected an unsigned 32-bit integer, got 4294967296");
  CHECK(error_of({{"step_started_ms", 1.5}}) ==
        "resume.4.step_started_ms: expected a 64-bit integer, got 1.5");
  CHECK(error_of({{"deadline_ms", json::array()}}) ==
        "resume.4.deadline_ms: expected a 64-bit integer, got []");
  CHECK(error_of({{"vars", "x"}}) == "resume.4.vars: expected an object, got \"x\"");
  CHECK(error_of(json::array({1, 2})) == "resume.4: expected an object");
}

TEST_CASE("ipc checkpoint: its text, written without JSON, parses to what to_json builds") {
  Checkpoint bare;
  Checkpoint full;
  full.step = 4, full.attempts = 7, full.tries = 2, full.step_started_ms = 1700000000123;
  full.deadline_ms = 1700000600123, full.started_ms = -1, full.wake_ms = 1700000005000;
  full.vars = {{"order", "o-\"1\"\n"}, {"n", 3}, {"bad", std::string("\xff")}};
  full.callback = {{"step", 5}, {"body", {{"ok", true}}}};
  full.branches = json::array({nullptr, {{"passed", json::object()}}});
  Checkpoint no_vars = full;
  no_vars.vars = json::object();  // empty: left out, as to_json leaves it out
  no_vars.wake_ms = 0;
  for (const Checkpoint& c : {bare, full, no_vars}) {
    std::string text;
    append_json(c, text);
    // Not UTF-8 goes out as U+FFFD, as encode() sends it.
    const json expected =
        json::parse(to_json(c).dump(-1, ' ', false, json::error_handler_t::replace));
    CHECK(json::parse(text) == expected);
    auto back = checkpoint_from_json(json::parse(text));
    REQUIRE(back.is_ok());
    CHECK(to_json(*back) == expected);
  }
}
