// NextTurn: work done in slices gets one slice per turn of the loop.
#include <catch2/catch.hpp>

#include <vector>

#include "shared/uv/next_turn.h"

TEST_CASE("next turn: a callback that schedules itself again runs once per turn of the loop") {
  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_prepare_t prepare;
  uint64_t turn = 0;
  uv_prepare_init(&loop, &prepare);
  prepare.data = &turn;
  uv_prepare_start(&prepare, [](uv_prepare_t* p) { *static_cast<uint64_t*>(p->data) += 1; });
  uv_unref(reinterpret_cast<uv_handle_t*>(&prepare));
  std::vector<uint64_t> ran;
  {
    corral::uv::NextTurn next(&loop);
    std::function<void()> slice = [&] {
      ran.push_back(turn);
      if (ran.size() < 5) next.schedule(slice);
    };
    next.schedule(slice);
    CHECK(next.scheduled());
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_FALSE(next.scheduled());
  }
  REQUIRE(ran.size() == 5);
  for (size_t i = 1; i < ran.size(); ++i) CHECK(ran[i] == ran[i - 1] + 1);
  uv_close(reinterpret_cast<uv_handle_t*>(&prepare), nullptr);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}

namespace {

void spin_ms(uint64_t ms) {
  const uint64_t until = uv_hrtime() + ms * 1'000'000;
  while (uv_hrtime() < until) {
  }
}

}  // namespace

TEST_CASE("next turn: with a turn marker, work after a poll and before the next shares a slice") {
  // libuv moves the loop's clock on after its poll and again before its timers: the work that
  // answers a poll (a check callback here, a pipe's reads in the master) and the idle callbacks
  // before the next poll (placing, a drain's next slice) are one turn for the API waiting.
  uv_loop_t loop;
  uv_loop_init(&loop);
  std::vector<bool> over_at_idle, over_after_poll;
  {
    corral::uv::TurnMarker marker(&loop);
    corral::uv::NextTurn next(&loop);
    uv_check_t check;
    uv_check_init(&loop, &check);
    uv_idle_t spin;  // keeps every poll from blocking until the check is done
    uv_idle_init(&loop, &spin);
    uv_idle_start(&spin, [](uv_idle_t*) {});
    struct Ctx {
      uv_loop_t* loop;
      corral::uv::NextTurn* next;
      std::vector<bool>* at_idle;
      std::vector<bool>* after_poll;
      uv_idle_t* spin;
    } ctx{&loop, &next, &over_at_idle, &over_after_poll, &spin};
    check.data = &ctx;
    uv_check_start(&check, [](uv_check_t* c) {
      auto* x = static_cast<Ctx*>(c->data);
      if (x->at_idle->size() >= 3) {
        uv_check_stop(c);
        uv_idle_stop(x->spin);
        return;
      }
      // A new turn: a fresh slice, which this callback then spends.
      x->after_poll->push_back(corral::uv::Slice::of_turn(x->loop).over());
      spin_ms(3);
      x->next->schedule([x] { x->at_idle->push_back(corral::uv::Slice::of_turn(x->loop).over()); });
    });
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_close(reinterpret_cast<uv_handle_t*>(&check), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&spin), nullptr);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
  REQUIRE(over_at_idle.size() == 3);
  for (size_t i = 0; i < over_at_idle.size(); ++i) {
    INFO("turn " << i);
    CHECK_FALSE(over_after_poll[i]);
    CHECK(over_at_idle[i]);
  }
}
