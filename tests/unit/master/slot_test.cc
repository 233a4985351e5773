#include <catch2/catch.hpp>

#include "master/slot.h"

using corral::master::can_transition;
using corral::master::has_process;
using corral::master::SlotState;

TEST_CASE("slot state machine: allows exactly the transitions of the documented diagram") {
  using S = SlotState;
  const S all[] = {S::kStarting, S::kReady,   S::kDraining, S::kStopping,
                   S::kExited,   S::kBackoff, S::kErrored};
  struct Edge {
    S from, to;
  };
  const Edge allowed[] = {
      {S::kStarting, S::kReady},   {S::kStarting, S::kStopping}, {S::kStarting, S::kDraining},
      {S::kStarting, S::kExited},  {S::kReady, S::kStopping},    {S::kReady, S::kDraining},
      {S::kReady, S::kExited},     {S::kDraining, S::kStopping}, {S::kDraining, S::kExited},
      {S::kStopping, S::kExited},  {S::kExited, S::kBackoff},    {S::kExited, S::kErrored},
      {S::kBackoff, S::kStarting}, {S::kErrored, S::kStarting},
      // adopting a reload's successor
      {S::kExited, S::kReady},     {S::kBackoff, S::kReady},     {S::kErrored, S::kReady},
  };
  for (S from : all) {
    for (S to : all) {
      bool want = false;
      for (const auto& e : allowed) want = want || (e.from == from && e.to == to);
      INFO(to_string(from) << " -> " << to_string(to));
      CHECK(can_transition(from, to) == want);
    }
  }
}

TEST_CASE("slot state machine: only starting, ready, draining and stopping own a process") {
  CHECK(has_process(SlotState::kStarting));
  CHECK(has_process(SlotState::kReady));
  CHECK(has_process(SlotState::kDraining));
  CHECK(has_process(SlotState::kStopping));
  CHECK_FALSE(has_process(SlotState::kExited));
  CHECK_FALSE(has_process(SlotState::kBackoff));
  CHECK_FALSE(has_process(SlotState::kErrored));
}
