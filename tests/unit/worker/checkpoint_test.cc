// An instance's checkpoint: the JSON it travels as between master and workers.
#include <catch2/catch.hpp>

#include "worker/engine/checkpoint.h"

using corral::worker::Checkpoint;
using corral::worker::checkpoint_from_json;
using corral::worker::to_json;
using nlohmann::json;

namespace {

Checkpoint full_checkpoint() {
  Checkpoint c;
  c.step = 3;
  c.attempts = 7;
  c.step_started_ms = 1'700'000'000'123;
  c.poll_deadline_ms = 1'700'000'600'123;
  c.started_ms = 1'699'999'999'001;
  c.vars = {{"job", "42"}, {"n", 2}, {"nested", {{"k", json::array({1, 2})}}}};
  return c;
}

void check_defaults(const Checkpoint& c) {
  CHECK(c.step == 0);
  CHECK(c.attempts == 0);
  CHECK(c.step_started_ms == 0);
  CHECK(c.poll_deadline_ms == 0);
  CHECK(c.started_ms == 0);
  CHECK(c.vars.is_null());
}

}  // namespace

TEST_CASE("checkpoint: to_json writes every field and checkpoint_from_json reads it back") {
  const Checkpoint c = full_checkpoint();
  const json j = to_json(c);
  CHECK(j == json{{"step", 3},
                  {"attempts", 7},
                  {"step_started_ms", 1'700'000'000'123},
                  {"poll_deadline_ms", 1'700'000'600'123},
                  {"started_ms", 1'699'999'999'001},
                  {"vars", c.vars}});

  // Through text too, as it travels in a frame or a journal row.
  const Checkpoint back = checkpoint_from_json(json::parse(j.dump()));
  CHECK(back.step == 3);
  CHECK(back.attempts == 7);
  CHECK(back.step_started_ms == 1'700'000'000'123);
  CHECK(back.poll_deadline_ms == 1'700'000'600'123);
  CHECK(back.started_ms == 1'699'999'999'001);
  CHECK(back.vars == c.vars);
  CHECK(to_json(back) == j);
}

TEST_CASE("checkpoint: missing fields keep their defaults") {
  check_defaults(checkpoint_from_json(json::object()));

  const Checkpoint some = checkpoint_from_json({{"step", 2}, {"started_ms", 500}});
  CHECK(some.step == 2);
  CHECK(some.started_ms == 500);
  CHECK(some.attempts == 0);
  CHECK(some.step_started_ms == 0);
  CHECK(some.poll_deadline_ms == 0);
  CHECK(some.vars.is_null());

  // A default checkpoint survives the round trip unchanged.
  check_defaults(checkpoint_from_json(to_json(Checkpoint{})));
}

TEST_CASE("checkpoint: vars are omitted from the JSON when there are none") {
  Checkpoint c = full_checkpoint();
  c.vars = nullptr;
  json j = to_json(c);
  CHECK_FALSE(j.contains("vars"));
  CHECK(j.size() == 5);

  c.vars = json::object();
  j = to_json(c);
  CHECK_FALSE(j.contains("vars"));
  CHECK(j.size() == 5);
  CHECK(checkpoint_from_json(j).vars.is_null());
}

TEST_CASE("checkpoint: a field of the wrong type throws a json exception") {
  CHECK_THROWS_AS(checkpoint_from_json({{"step", "two"}}), json::exception);
  CHECK_THROWS_AS(checkpoint_from_json({{"attempts", "3"}}), json::exception);
  CHECK_THROWS_AS(checkpoint_from_json({{"step_started_ms", "soon"}}), json::exception);
  CHECK_THROWS_AS(checkpoint_from_json({{"poll_deadline_ms", json::array()}}), json::exception);
  CHECK_THROWS_AS(checkpoint_from_json({{"started_ms", json::object()}}), json::exception);
  // Not an object at all.
  CHECK_THROWS_AS(checkpoint_from_json(json::array({1, 2})), json::exception);
}
