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
