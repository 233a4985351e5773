// The hook sender on a real loop: commands run with the payload on stdin, webhooks POST to a
// scripted server on the same loop, and everything stays bounded: the queue, each command's
// time, and a stopping daemon's wait.
#include "master/hooks/sender.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "master/load_watch.h"
#include "shared/proc.h"
#include "tests/support/raw_http_server.h"
#include "tests/support/temp_dir.h"

namespace corral::master {
namespace {

using config::Hook;
using config::HookEvent;
using nlohmann::json;
using test::RawHttpServer;
using test::RawRequest;
using test::Script;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Hook command(std::vector<std::string> argv, uint64_t timeout_ms = 10000) {
  Hook h;
  h.command = std::move(argv);
  h.retries = 0;
  h.timeout_ms = timeout_ms;
  return h;
}

Hook webhook(std::string url, int retries, uint64_t timeout_ms) {
  Hook h;
  h.url = std::move(url);
  h.retries = retries;
  h.timeout_ms = timeout_ms;
  h.headers = {{"X-Corral-Test", "yes"}};
  return h;
}

std::string status_line(int code) {
  return "HTTP/1.1 " + std::to_string(code) +
         " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}

class Fixture {
 public:
  explicit Fixture(HookSender::Limits limits = {}) {
    uv_loop_init(&loop);
    sender = std::make_unique<HookSender>(
        &loop, limits, [this](HookEvent e, HookOutcome o) { outcomes.emplace_back(e, o); });
  }
  ~Fixture() {
    sender.reset();
    server.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }

  void hooks_for(HookEvent e, std::vector<Hook> hooks) {
    config::Hooks all;
    all.by_event[static_cast<size_t>(e)] = std::move(hooks);
    sender->set_hooks(all);
  }
  // Runs the loop until `done` holds or `timeout_ms` passes; returns whether it held.
  bool run_until(const std::function<bool()>& done, uint64_t timeout_ms = 10000) {
    uv::Timer tick(&loop);  // wakes the loop to look at `done` and the clock
    tick.start(5, 5, [] {});
    const uint64_t deadline = monotonic_ms() + timeout_ms;
    while (!done() && monotonic_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    return done();
  }
  size_t count(HookOutcome o) const {
    size_t n = 0;
    for (const auto& [e, outcome] : outcomes) n += outcome == o ? 1 : 0;
    return n;
  }

  uv_loop_t loop;
  std::unique_ptr<HookSender> sender;
  std::unique_ptr<RawHttpServer> server;
  std::vector<std::pair<HookEvent, HookOutcome>> outcomes;
};

TEST_CASE("hook sender: a command gets the payload on its stdin and the event in CORRAL_EVENT") {
  test::TempDir dir;
  const std::string out = dir.path() + "/out";
  Fixture f;
  f.hooks_for(HookEvent::kRunFinished,
              {command({"/bin/sh", "-c", "cat > " + out + "; echo \"$CORRAL_EVENT\" >> " + out})});
  f.sender->fire(HookEvent::kRunFinished, {{"run", "r1"}});
  REQUIRE(f.run_until([&] { return !f.outcomes.empty(); }));
  CHECK(f.outcomes[0] == std::make_pair(HookEvent::kRunFinished, HookOutcome::kOk));
  CHECK(read_text(out) == "{\"run\":\"r1\"}\nrun_finished\n");
  CHECK(f.sender->in_flight() == 0);
}

TEST_CASE("hook sender: a command that exits non-zero, or cannot start, has failed") {
  Fixture f;
  f.hooks_for(HookEvent::kWorkerExit,
              {command({"/bin/sh", "-c", "exit 3"}), command({"/nonexistent/notify"})});
  // A megabyte the shell never reads: the write of the payload meets a closed pipe (EPIPE).
  f.sender->fire(HookEvent::kWorkerExit, json{{"pad", std::string(1 << 20, 'x')}});
  REQUIRE(f.run_until([&] { return f.outcomes.size() == 2; }));
  CHECK(f.count(HookOutcome::kFailed) == 2);
}

TEST_CASE("hook sender: a command past its timeout is killed with the processes it started") {
  test::TempDir dir;
  const std::string pid_file = dir.path() + "/pid";
  Fixture f;
  // The shell starts a child and waits for it: killing the shell alone would leave the child.
  f.hooks_for(HookEvent::kWorkerExit,
              {command({"/bin/sh", "-c", "sleep 30 & echo $! > " + pid_file + "; wait"}, 300)});
  const uint64_t start = monotonic_ms();
  f.sender->fire(HookEvent::kWorkerExit, json::object());
  REQUIRE(f.run_until([&] { return !f.outcomes.empty(); }, 5000));
  CHECK(monotonic_ms() - start < 3000);
  CHECK(f.outcomes[0].second == HookOutcome::kFailed);
  const pid_t child = std::stoi(read_text(pid_file));
  CHECK(f.run_until([&] { return !read_proc(child); }, 3000));
}

TEST_CASE("hook sender: with the queue full, the oldest waiting delivery is dropped") {
  test::TempDir dir;
  const std::string out = dir.path() + "/out";
  Fixture f(HookSender::Limits{1, 2});
  f.hooks_for(HookEvent::kRunFinished,
              {command({"/bin/sh", "-c", "cat >> " + out + "; sleep 0.1"})});
  for (int n = 1; n <= 4; ++n) f.sender->fire(HookEvent::kRunFinished, {{"n", n}});
  // 1 runs, 2 and 3 wait; 4 pushes 2 out.
  CHECK(f.count(HookOutcome::kDropped) == 1);
  CHECK(f.sender->in_flight() == 1);
  CHECK(f.sender->queued() == 2);
  REQUIRE(f.run_until([&] { return f.outcomes.size() == 4; }));
  CHECK(f.count(HookOutcome::kOk) == 3);
  CHECK(read_text(out) == "{\"n\":1}\n{\"n\":3}\n{\"n\":4}\n");
}

TEST_CASE("hook sender: a stop's grace bounds what runs, and the loop ends after it") {
  Fixture f;
  f.hooks_for(HookEvent::kWorkerExit, {command({"/bin/sleep", "30"}, 3600000)});
  f.sender->fire(HookEvent::kWorkerExit, json::object());
  const uint64_t start = monotonic_ms();
  f.sender->stop(200);
  uv_run(&f.loop, UV_RUN_DEFAULT);  // returns once nothing is left to wait for
  CHECK(monotonic_ms() - start < 3000);
  REQUIRE(f.outcomes.size() == 1);
  CHECK(f.outcomes[0].second == HookOutcome::kFailed);
  f.sender->fire(HookEvent::kWorkerExit, json::object());  // too late: dropped at once
  CHECK(f.outcomes.back().second == HookOutcome::kDropped);
}

TEST_CASE("hook sender: a webhook answered 503 twice is tried again and delivered once") {
  Fixture f;
  f.server = std::make_unique<RawHttpServer>(&f.loop, [&](const RawRequest&) {
    return Script{test::send(status_line(f.server->requests().size() <= 2 ? 503 : 200)),
                  test::close_connection()};
  });
  f.hooks_for(HookEvent::kWorkerExit, {webhook(f.server->url("/hook"), 3, 2000)});
  f.sender->fire(HookEvent::kWorkerExit, {{"slot", 0}});
  REQUIRE(f.run_until([&] { return !f.outcomes.empty(); }));
  CHECK(f.outcomes[0].second == HookOutcome::kOk);
  REQUIRE(f.server->requests().size() == 3);
  const RawRequest& last = f.server->requests().back();
  CHECK(last.method == "POST");
  CHECK(last.target == "/hook");
  CHECK(last.body == "{\"slot\":0}");
  CHECK_THAT(last.bytes, Catch::Contains("Content-Type: application/json\r\n"));
  CHECK_THAT(last.bytes, Catch::Contains("X-Corral-Test: yes\r\n"));
}

TEST_CASE("hook sender: a webhook is tried again only while it may help, and retries times") {
  struct Case {
    const char* name;
    int status;  // the receiver's answer to every try; 0: none at all
    int retries;
    size_t tries;
  };
  const Case cases[] = {
      {"no answer, 1 retry", 0, 1, 2},
      {"503 every time, 2 retries", 503, 2, 3},
      {"404: no retry", 404, 3, 1},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Fixture f;
    f.server = std::make_unique<RawHttpServer>(&f.loop, [&c](const RawRequest&) {
      return c.status == 0 ? Script{}
                           : Script{test::send(status_line(c.status)), test::close_connection()};
    });
    f.hooks_for(HookEvent::kWorkerExit, {webhook(f.server->url("/hook"), c.retries, 200)});
    f.sender->fire(HookEvent::kWorkerExit, json::object());
    REQUIRE(f.run_until([&] { return !f.outcomes.empty(); }));
    CHECK(f.outcomes[0].second == HookOutcome::kFailed);
    CHECK(f.server->requests().size() == c.tries);
  }
}

TEST_CASE("hook sender: a stopping daemon abandons a webhook still waiting for its answer") {
  Fixture f;
  f.server = std::make_unique<RawHttpServer>(&f.loop, [](const RawRequest&) { return Script{}; });
  f.hooks_for(HookEvent::kWorkerExit, {webhook(f.server->url("/hang"), 3, 3600000)});
  f.sender->fire(HookEvent::kWorkerExit, json::object());
  REQUIRE(f.run_until([&] { return f.server->requests().size() == 1; }));
  const uint64_t start = monotonic_ms();
  f.sender->stop(100);
  REQUIRE(f.run_until([&] { return !f.outcomes.empty(); }, 5000));
  CHECK(monotonic_ms() - start < 2500);
  CHECK(f.outcomes[0].second == HookOutcome::kFailed);
}

}  // namespace
}  // namespace corral::master
