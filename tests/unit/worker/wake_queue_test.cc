// WakeQueue: the engine's one timer for every waiting instance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

#include "worker/engine/wake_queue.h"

namespace {

using corral::worker::WakeQueue;
using Fired = std::vector<std::pair<uint64_t, uint64_t>>;  // id, token

struct Loop {
  Loop() { uv_loop_init(&loop); }
  ~Loop() {
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  uv_loop_t loop;
};

// Runs the loop until `done` holds or 5 s have passed.
template <typename Pred>
bool run_until(uv_loop_t* loop, Pred done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done() && std::chrono::steady_clock::now() < deadline) uv_run(loop, UV_RUN_ONCE);
  return done();
}

uint64_t now_ms(uv_loop_t* loop) {
  uv_update_time(loop);
  return uv_now(loop);
}

}  // namespace

TEST_CASE("wake queue: wake-ups fire in order of time, then of scheduling, never early") {
  Loop l;
  Fired fired;
  std::vector<uint64_t> at;
  WakeQueue q(&l.loop, [&](uint64_t id, uint64_t token) {
    fired.emplace_back(id, token);
    at.push_back(now_ms(&l.loop));
  });
  uint64_t start = now_ms(&l.loop);
  uint64_t t30 = q.schedule(1, 30);
  uint64_t t10a = q.schedule(2, 10);
  uint64_t t10b = q.schedule(3, 10);
  uint64_t t0 = q.schedule(4, 0);
  CHECK(t30 < t10a);
  CHECK(t10a < t10b);
  CHECK(t10b < t0);
  REQUIRE(run_until(&l.loop, [&] { return fired.size() == 4; }));
  CHECK(fired == Fired{{4, t0}, {2, t10a}, {3, t10b}, {1, t30}});
  CHECK(at[1] >= start + 10);
  CHECK(at[3] >= start + 30);
  CHECK(q.size() == 0);
}

TEST_CASE("wake queue: waits of a second or more end on a 20 ms grid, together, never early") {
  Loop l;
  std::vector<uint64_t> at;
  Fired fired;
  // The loop's time as of this turn, not refreshed: the same for every callback of one turn (a
  // refreshed clock can move on between them on a slow build), and never later than the time
  // the timer fired at, so the check below that none fired early stays strict.
  WakeQueue q(&l.loop, [&](uint64_t id, uint64_t token) {
    fired.emplace_back(id, token);
    at.push_back(uv_now(&l.loop));
  });
  // Three waits due within one grain, whatever the clock's phase: 1,000 ms past a multiple of
  // 20 ms, then 5 and 15 ms later than that.
  uint64_t start = now_ms(&l.loop);
  uint64_t to_grid = (WakeQueue::kGrainMs - start % WakeQueue::kGrainMs) % WakeQueue::kGrainMs;
  uint64_t a = q.schedule(1, WakeQueue::kCoarseFromMs + to_grid + 1);
  uint64_t b = q.schedule(2, WakeQueue::kCoarseFromMs + to_grid + 6);
  uint64_t c = q.schedule(3, WakeQueue::kCoarseFromMs + to_grid + 16);
  REQUIRE(run_until(&l.loop, [&] { return fired.size() == 3; }));
  CHECK(fired == Fired{{1, a}, {2, b}, {3, c}});
  CHECK(at[0] >= start + WakeQueue::kCoarseFromMs + to_grid + 16);  // none early: the grain's end
  CHECK(at[0] == at[2]);  // one turn of the loop for the three: one loop time
}

TEST_CASE("wake queue: an earlier wake-up scheduled later re-arms the timer") {
  Loop l;
  Fired fired;
  WakeQueue q(&l.loop, [&](uint64_t id, uint64_t token) { fired.emplace_back(id, token); });
  q.schedule(1, 60000);  // a minute away: the test ends long before
  uint64_t soon = q.schedule(2, 5);
  REQUIRE(run_until(&l.loop, [&] { return !fired.empty(); }));
  CHECK(fired == Fired{{2, soon}});
  CHECK(q.size() == 1);
}

TEST_CASE("wake queue: every wake-up is delivered with its token, replaced ones too") {
  // The owner tells a replaced wake-up by its token: the queue delivers both.
  Loop l;
  Fired fired;
  WakeQueue q(&l.loop, [&](uint64_t id, uint64_t token) { fired.emplace_back(id, token); });
  uint64_t first = q.schedule(7, 5);
  uint64_t second = q.schedule(7, 10);
  REQUIRE(run_until(&l.loop, [&] { return fired.size() == 2; }));
  CHECK(fired == Fired{{7, first}, {7, second}});
}

// An owner that always asks to be woken at once must not hold the loop in one callback: the
// loop polls for I/O (its prepare handles run) between any two of its wake-ups.
void check_later_turn(bool exact) {
  Loop l;
  static int polls = 0;
  polls = 0;
  uv_prepare_t prepare;
  uv_prepare_init(&l.loop, &prepare);
  uv_prepare_start(&prepare, [](uv_prepare_t*) { ++polls; });
  std::vector<int> polls_at_fire;
  WakeQueue* queue = nullptr;
  WakeQueue q(&l.loop, [&](uint64_t id, uint64_t) {
    polls_at_fire.push_back(polls);
    // A slow owner: the clock moves on before it asks again, as on a busy machine.
    uint64_t until = uv_hrtime() + 2'000'000;
    while (uv_hrtime() < until) {
    }
    if (polls_at_fire.size() < 5) {
      exact ? queue->schedule_at(id, uv_hrtime() / 1000) : queue->schedule(id, 0);
    } else {
      uv_prepare_stop(&prepare);  // or the loop would wait for I/O with nothing left to wake it
    }
  });
  queue = &q;
  if (exact) REQUIRE(q.use_exact_clock().is_ok());
  exact ? q.schedule_at(1, uv_hrtime() / 1000) : q.schedule(1, 0);
  REQUIRE(run_until(&l.loop, [&] { return polls_at_fire.size() == 5; }));
  for (size_t i = 1; i < polls_at_fire.size(); ++i) CHECK(polls_at_fire[i] > polls_at_fire[i - 1]);
  bool closed = false;
  prepare.data = &closed;
  uv_close(reinterpret_cast<uv_handle_t*>(&prepare),
           [](uv_handle_t* h) { *static_cast<bool*>(h->data) = true; });
  REQUIRE(run_until(&l.loop, [&] { return closed; }));  // before `prepare` leaves the stack
}

TEST_CASE("wake queue: a wake-up scheduled from a firing one waits for a later loop turn") {
  check_later_turn(false);
}

TEST_CASE(
    "wake queue: on the exact clock too, a wake-up scheduled from a firing one waits for a later "
    "loop turn") {
  check_later_turn(true);
}

TEST_CASE(
    "wake queue: on the exact clock, wake-ups come in order, at most kEarlyUs before their "
    "microsecond") {
  Loop l;
  Fired fired;
  std::vector<uint64_t> at;  // uv_hrtime() in µs as each fired
  WakeQueue q(&l.loop, [&](uint64_t id, uint64_t token) {
    fired.emplace_back(id, token);
    at.push_back(uv_hrtime() / 1000);
  });
  REQUIRE(q.use_exact_clock().is_ok());
  // Times that libuv's millisecond timers cannot tell apart from their neighbours.
  uint64_t start = uv_hrtime() / 1000;
  std::vector<uint64_t> due = {start + 7'300, start + 2'450, start + 2'900, start + 12'050};
  uint64_t a = q.schedule_at(1, due[0]);
  uint64_t b = q.schedule_at(2, due[1]);
  uint64_t c = q.schedule_at(3, due[2]);
  uint64_t d = q.schedule_at(4, due[3]);
  REQUIRE(run_until(&l.loop, [&] { return fired.size() == 4; }));
  CHECK(fired == Fired{{2, b}, {3, c}, {1, a}, {4, d}});
  CHECK(at[0] + WakeQueue::kEarlyUs >= due[1]);
  CHECK(at[1] + WakeQueue::kEarlyUs >= due[2]);
  CHECK(at[2] + WakeQueue::kEarlyUs >= due[0]);
  CHECK(at[3] + WakeQueue::kEarlyUs >= due[3]);
  CHECK(q.size() == 0);
}

TEST_CASE("wake queue: an exception from the owner goes no further and the others still fire") {
  Loop l;
  Fired fired;
  WakeQueue q(&l.loop, [&](uint64_t id, uint64_t token) {
    if (id == 1) throw std::runtime_error("owner failed");
    fired.emplace_back(id, token);
  });
  q.schedule(1, 1);
  uint64_t t = q.schedule(2, 1);
  REQUIRE(run_until(&l.loop, [&] { return !fired.empty(); }));
  CHECK(fired == Fired{{2, t}});
}

TEST_CASE("wake queue: destroyed with wake-ups pending, it fires none of them") {
  Loop l;
  int fired = 0;
  {
    WakeQueue q(&l.loop, [&](uint64_t, uint64_t) { ++fired; });
    q.schedule(1, 0);
    q.schedule(2, 1);
  }
  uv_run(&l.loop, UV_RUN_DEFAULT);  // only the timer's close callback runs
  CHECK(fired == 0);
}

TEST_CASE(
    "wake queue: wake-ups scheduled in order, nearly in order and far out of order fire in "
    "order of time, then of scheduling") {
  Loop l;
  Fired fired;
  WakeQueue q(&l.loop, [&](uint64_t id, uint64_t token) { fired.emplace_back(id, token); });
  REQUIRE(q.use_exact_clock().is_ok());
  const uint64_t start = uv_hrtime() / 1000 + 2'000;
  struct Due {
    uint64_t at;
    uint64_t token;
    uint64_t id;
  };
  std::vector<Due> due;
  for (uint64_t i = 0; i < 300; ++i) {
    uint64_t at = start + i * 20;                            // in order (the FIFO's end)
    if (i % 7 == 3) at -= 100;                               // a few places back (into the FIFO)
    if (i % 50 == 49) at = start + (i % 3) * 10;             // far back (into the heap)
    if (i % 10 == 5) at = due.empty() ? at : due.back().at;  // the same time as the last
    due.push_back({at, q.schedule_at(i, at), i});
  }
  REQUIRE(q.size() == 300);
  std::stable_sort(due.begin(), due.end(),
                   [](const Due& a, const Due& b) { return a.at < b.at; });  // then by token
  Fired want;
  for (const Due& d : due) want.emplace_back(d.id, d.token);
  REQUIRE(run_until(&l.loop, [&] { return fired.size() == 300; }));
  CHECK(fired == want);
  CHECK(q.size() == 0);
}

TEST_CASE(
    "wake queue: on the exact clock, a backlog of wake-ups leaves the loop to read its sockets "
    "between turns") {
  // 2,000 wake-ups are due at once, each taking 20 µs (40 ms in all, against a turn's budget of
  // kTurnBudgetUs). The first makes a socket readable: its reader runs long before the last.
  Loop l;
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0);
  struct Seen {
    size_t fired = 0;
    size_t fired_when_read = 0;
  } seen;
  std::vector<uint64_t> ids;
  WakeQueue q(&l.loop, [&](uint64_t id, uint64_t) {
    if (seen.fired++ == 0) REQUIRE(write(fds[1], "x", 1) == 1);
    ids.push_back(id);
    const uint64_t until = uv_hrtime() + 20'000;
    while (uv_hrtime() < until) {
    }
  });
  REQUIRE(q.use_exact_clock().is_ok());
  const uint64_t now = uv_hrtime() / 1000;
  for (uint64_t i = 0; i < 2000; ++i) q.schedule_at(i, now);
  uv_poll_t reader;
  REQUIRE(uv_poll_init(&l.loop, &reader, fds[0]) == 0);
  reader.data = &seen;
  uv_poll_start(&reader, UV_READABLE, [](uv_poll_t* p, int, int) {
    auto* s = static_cast<Seen*>(p->data);
    s->fired_when_read = s->fired;
    uv_poll_stop(p);
  });
  REQUIRE(run_until(&l.loop, [&] { return seen.fired == 2000; }));
  INFO("the reader ran after " << seen.fired_when_read << " wake-ups");
  CHECK(seen.fired_when_read > 0);
  CHECK(seen.fired_when_read < 1000);
  std::vector<uint64_t> want(2000);
  for (uint64_t i = 0; i < 2000; ++i) want[i] = i;
  CHECK(ids == want);  // in order across the turns
  uv_close(reinterpret_cast<uv_handle_t*>(&reader), nullptr);
  close(fds[0]);
  close(fds[1]);
}

TEST_CASE(
    "wake queue: on the exact clock, a wake-up due at once when its turn ends fires at the next "
    "poll, not kEarlyUs later") {
  // An owner that asks to be woken now from each wake-up (a VU whose iterations end at once):
  // 200 wake-ups in a row. Waiting kEarlyUs after each turn would take 400 ms at least.
  Loop l;
  int fired = 0;
  std::unique_ptr<WakeQueue> q;
  q = std::make_unique<WakeQueue>(&l.loop, [&](uint64_t id, uint64_t) {
    if (++fired < 200) q->schedule_at(id, uv_hrtime() / 1000);
  });
  REQUIRE(q->use_exact_clock().is_ok());
  const uint64_t start_ns = uv_hrtime();
  q->schedule_at(1, start_ns / 1000);
  REQUIRE(run_until(&l.loop, [&] { return fired == 200; }));
  const uint64_t took_ms = (uv_hrtime() - start_ns) / 1'000'000;
  INFO("200 wake-ups in a row took " << took_ms << " ms");
  CHECK(took_ms < 200 * WakeQueue::kEarlyUs / 1000 / 2);
}
