// No exception unwinds into libuv: a callback that throws, of each kind corral registers
// (timer, stream read, stream write error, signal, async; libcurl's are covered by the curl
// client's tests), is caught and counted, and the loop goes on serving the others. corral
// registers no uv_fs callbacks. Also: what uv::Timer::active() says.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <stdexcept>
#include <thread>

#include "shared/proc.h"
#include "shared/uv/async.h"
#include "shared/uv/guard.h"
#include "shared/uv/signal.h"
#include "shared/uv/stream.h"
#include "shared/uv/timer.h"

using corral::uv::callback_failures;

namespace {

struct Loop {
  Loop() { uv_loop_init(&loop); }
  ~Loop() {
    uv_run(&loop, UV_RUN_NOWAIT);
    uv_walk(
        &loop,
        [](uv_handle_t* h, void*) {
          if (!uv_is_closing(h)) uv_close(h, nullptr);
        },
        nullptr);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  bool run_until(const std::function<bool()>& done, uint64_t timeout_ms = 5000) {
    corral::uv::Timer tick(&loop);
    tick.start(5, 5, [] {});
    uint64_t deadline = corral::monotonic_ms() + timeout_ms;
    while (!done() && corral::monotonic_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    tick.close();
    return done();
  }
  uv_loop_t loop;
};

}  // namespace

TEST_CASE("uv guard: a timer callback that throws is counted and the loop goes on") {
  Loop l;
  uint64_t before = callback_failures();
  corral::uv::Timer bad(&l.loop), good(&l.loop);
  bool fired = false;
  bad.start(1, 0, [] { throw std::runtime_error("timer boom"); });
  good.start(20, 0, [&] { fired = true; });
  REQUIRE(l.run_until([&] { return fired; }));
  CHECK(callback_failures() == before + 1);
}

TEST_CASE("uv guard: a read callback that throws is counted and the stream keeps reading") {
  Loop l;
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  auto stream = corral::uv::Stream::pipe(&l.loop);
  REQUIRE(stream->open_fd(fds[0]).is_ok());
  uint64_t before = callback_failures();
  int reads = 0;
  REQUIRE(stream
              ->start_read(
                  [&](std::string_view) {
                    if (++reads == 1) throw std::runtime_error("read boom");
                  },
                  [](int) {})
              .is_ok());
  REQUIRE(write(fds[1], "a", 1) == 1);
  REQUIRE(l.run_until([&] { return reads == 1; }));
  REQUIRE(write(fds[1], "b", 1) == 1);
  REQUIRE(l.run_until([&] { return reads == 2; }));
  CHECK(callback_failures() == before + 1);
  stream->close();
  close(fds[1]);
}

TEST_CASE("uv guard: an end-of-stream callback that throws after a failed write is counted") {
  Loop l;
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  auto stream = corral::uv::Stream::pipe(&l.loop);
  REQUIRE(stream->open_fd(fds[0]).is_ok());
  bool ended = false;
  REQUIRE(stream
              ->start_read([](std::string_view) {},
                           [&](int) {
                             ended = true;
                             throw std::runtime_error("end boom");
                           })
              .is_ok());
  uint64_t before = callback_failures();
  close(fds[1]);  // the peer is gone: the read ends
  REQUIRE(l.run_until([&] { return ended; }));
  CHECK(callback_failures() == before + 1);
  stream->close();
}

TEST_CASE("uv guard: a signal callback that throws is counted and the next signal still arrives") {
  Loop l;
  corral::uv::Signal sig(&l.loop);
  int seen = 0;
  REQUIRE(sig.start(SIGUSR2,
                    [&](int) {
                      if (++seen == 1) throw std::runtime_error("signal boom");
                    })
              .is_ok());
  uint64_t before = callback_failures();
  raise(SIGUSR2);
  REQUIRE(l.run_until([&] { return seen == 1; }));
  raise(SIGUSR2);
  REQUIRE(l.run_until([&] { return seen == 2; }));
  CHECK(callback_failures() == before + 1);
}

TEST_CASE("uv guard: an async callback that throws is counted and later sends still arrive") {
  Loop l;
  int seen = 0;
  corral::uv::Async async(&l.loop, [&] {
    if (++seen == 1) throw std::runtime_error("async boom");
  });
  uint64_t before = callback_failures();
  std::thread([&] { async.send(); }).join();
  REQUIRE(l.run_until([&] { return seen == 1; }));
  std::thread([&] { async.send(); }).join();
  REQUIRE(l.run_until([&] { return seen == 2; }));
  CHECK(callback_failures() == before + 1);
  async.close();
}

TEST_CASE("uv timer: active while set, not once a one-shot fired or it was stopped") {
  Loop l;
  corral::uv::Timer once(&l.loop), stopped(&l.loop);
  bool fired = false, active_in_callback = true;
  CHECK_FALSE(once.active());
  once.start(1, 0, [&] {
    active_in_callback = once.active();
    fired = true;
  });
  stopped.start(60000, 0, [] {});
  CHECK(once.active());
  CHECK(stopped.active());
  stopped.stop();
  CHECK_FALSE(stopped.active());
  REQUIRE(l.run_until([&] { return fired; }));
  CHECK_FALSE(active_in_callback);  // the due sweep may set it again from its callback
  CHECK_FALSE(once.active());
}
