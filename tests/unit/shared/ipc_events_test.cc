// The events workers report: one encoding for both sides, decoded strictly.
#include <catch2/catch.hpp>

#include "shared/ipc/events.h"

using corral::ipc::Event;
using corral::ipc::event_from_json;
using corral::ipc::EventKind;
using corral::ipc::Outcome;
using nlohmann::json;

namespace {

Event round_trip(const Event& e) {
  auto back = event_from_json(json::parse(to_json(e).dump()));
  REQUIRE(back.is_ok());
  return *back;
}

std::string error_of(const json& j) {
  auto e = event_from_json(j, "events[3]");
  REQUIRE_FALSE(e.is_ok());
  return e.status().message();
}

}  // namespace

TEST_CASE("events: a step, a done and a progress event survive the round trip") {
  Event step;
  step.kind = EventKind::kStep;
  step.run = "r1-abcd";
  step.index = 17;
  step.step = 2;
  step.outcome = Outcome::kFailed;
  step.attempts = 9;
  step.started_ms = 1000;
  step.ended_ms = 2000;
  step.status = 503;
  step.until_ms = 900;
  step.tls_us = 1500;
  step.reason = "expect: status was 503, expected 200";
  step.url = "http://127.0.0.1:1/final";
  step.body = std::string(corral::ipc::kBodyExcerptBytes, 'x') + "\xE2\x80\xA6";  // the longest
  step.vars = {{"job", "j-1"}};
  CHECK(round_trip(step) == step);

  Event done;
  done.kind = EventKind::kDone;
  done.run = "r1-abcd";
  done.index = 3;
  done.outcome = Outcome::kCancelled;
  done.reason = "cancelled";
  done.started_ms = 5;
  done.ended_ms = 6;
  CHECK(round_trip(done) == done);

  Event progress;
  progress.kind = EventKind::kProgress;
  progress.run = "r2-0000";
  progress.index = 4;
  progress.checkpoint.step = 1;
  progress.checkpoint.attempts = 12;
  progress.checkpoint.tries = 1;
  CHECK(round_trip(progress) == progress);

  Event branch = step;  // a step of a parallel step's branch carries the instance's checkpoint
  branch.vars = nullptr;
  branch.in_branch = true;
  branch.checkpoint.step = 1;
  branch.checkpoint.branches = {{{"checkpoint", {{"step", 4}}}}, nullptr, {{"passed", {{"a", 1}}}}};
  CHECK(to_json(branch)["checkpoint"]["branches"].size() == 3);
  CHECK(round_trip(branch) == branch);
  CHECK_FALSE(to_json(step).contains("checkpoint"));
  auto bad = event_from_json({{"t", "progress"}, {"run", "r"}, {"i", 0},
                              {"checkpoint", {{"step", 1}, {"branches", {1}}}}});
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message() == "event.checkpoint.branches[0]: expected an object or null");
}

TEST_CASE("events: an unknown kind or state, or a field of the wrong type, is a protocol error") {
  CHECK(error_of({{"t", "stepp"}, {"run", "r"}, {"i", 1}}) ==
        "events[3].t: unknown event kind \"stepp\"");
  CHECK(error_of({{"t", "done"}, {"run", "r"}, {"i", 1}, {"state", "great"}}) ==
        "events[3].state: unknown state \"great\"");
  // A step is never cancelled: only an instance is.
  CHECK(error_of({{"t", "step"}, {"run", "r"}, {"i", 1}, {"step", 0}, {"state", "cancelled"}}) ==
        "events[3].state: unknown state \"cancelled\"");
  CHECK(error_of({{"t", "step"}, {"run", "r"}, {"i", true}, {"step", 0}, {"state", "passed"}}) ==
        "events[3].i: expected an unsigned 32-bit integer, got true");
  CHECK(error_of({{"t", "done"}, {"i", 1}, {"state", "passed"}}) == "events[3].run: missing");
  CHECK(error_of({{"t", "progress"}, {"run", "r"}, {"i", 1}}) == "events[3].checkpoint: missing");
  CHECK(error_of({{"t", "progress"}, {"run", "r"}, {"i", 1}, {"checkpoint", {{"step", "1"}}}}) ==
        "events[3].checkpoint.step: expected an unsigned 32-bit integer, got \"1\"");
  CHECK(error_of(json::array()) == "events[3]: expected an object");
  // Found by fuzz_ipc_payloads (corpus/fuzz_ipc_payloads/regress-negative-until): a negative
  // until_ms decoded, but it is written as "not a poll" and came back as -1.
  CHECK(error_of({{"t", "step"}, {"run", "r"}, {"i", 1}, {"step", 0}, {"state", "failed"},
                  {"until_ms", -900}}) == "events[3].until_ms: expected a time of 0 or more, got -900");
  // A worker keeps at most kBodyExcerptBytes of a response: more is its bug, not a record.
  CHECK(error_of({{"t", "step"},
                  {"run", "r"},
                  {"i", 1},
                  {"step", 0},
                  {"state", "failed"},
                  {"body", std::string(600, 'x')}}) ==
        "events[3].body: expected at most 512 bytes of a response, got 600");
}
