// RunService, the runs part the API and the schedules submit through, and ScheduleService, against
// a fake of the workers (WorkerLink): what they ask of the workers, and what they refuse.
#include <catch2/catch.hpp>

#include <uv.h>

#include <string>
#include <vector>

#include "config/scenario/parse.h"
#include "master/run_service.h"
#include "master/schedule_service.h"
#include "shared/proc.h"

using corral::ipc::MessageType;
using corral::master::Dispatcher;
using corral::master::Run;
using corral::master::Runs;
using corral::master::RunService;
using nlohmann::json;

namespace {

struct FakeWorkers : corral::master::WorkerLink {
  using WorkerLink::send_to;
  bool send_to(int slot, MessageType type, const corral::ipc::Payload& payload) override {
    sent.push_back({slot, type, payload.json()});
    return true;
  }
  void send_to_all(MessageType type, const json& payload) override {
    sent.push_back({-1, type, payload});
  }
  void place_soon() override { ++placements; }
  bool stopping() const override { return false; }
  std::string callback_base() const override { return base; }
  std::vector<int> ready_workers() const override { return {0}; }
  int wanted() const override { return 1; }
  void set_wanted(int) override {}

  struct Sent {
    int slot;  // -1: every worker
    MessageType type;
    json payload;
  };
  std::vector<Sent> sent;
  int placements = 0;
  std::string base;
};

struct Bench {
  Bench()
      : dispatcher(
            runs, [](int, MessageType, const corral::ipc::Payload&) { return true; }, 100000),
        service(uv_default_loop(), cfg, secrets, runs, dispatcher, workers) {}

  corral::config::Config cfg;
  corral::Secrets secrets;
  Runs runs;
  Dispatcher dispatcher;
  FakeWorkers workers;
  RunService service;
};

json body(const char* steps, int instances) {
  return {{"scenario", {{"name", "s"}, {"steps", json::parse(steps)}}}, {"instances", instances}};
}

constexpr const char* kRequest = R"([{"request": {"url": "http://127.0.0.1:1/"}}])";
constexpr const char* kCallback =
    R"([{"request": {"url": "http://127.0.0.1:1/"}}, {"callback": {"timeout": "1m"}}])";

}  // namespace

TEST_CASE("run service: a submitted run is created whole and the workers are asked to place it") {
  Bench b;
  auto req = b.service.request(body(kRequest, 5000));
  REQUIRE(req.is_ok());
  Run& run = b.service.submit(
      {req->scenario, req->vars, req->count, std::nullopt, req->priority, std::nullopt, nullptr});
  CHECK(run.size == 5000);
  CHECK(b.runs.pending() == 5000);
  CHECK(b.workers.placements == 1);
  CHECK(b.workers.sent.empty());  // placing is the dispatcher's, in a later turn
}

TEST_CASE(
    "run service: a callback step is refused while the workers have no URL to give out, "
    "and taken once they have") {
  Bench b;
  auto refused = b.service.request(body(kCallback, 1));
  REQUIRE_FALSE(refused.is_ok());
  CHECK_THAT(refused.status().message(),
             Catch::Contains("scenario.steps[1]: a callback step needs a URL"));
  b.workers.base = "http://127.0.0.1:7070";
  CHECK(b.service.request(body(kCallback, 1)).is_ok());
}

TEST_CASE("run service: a cancel goes to every worker, naming the run") {
  Bench b;
  b.service.stop_on_workers("r7-abc");
  REQUIRE(b.workers.sent.size() == 1);
  CHECK(b.workers.sent[0].slot == -1);
  CHECK(b.workers.sent[0].type == MessageType::kCancel);
  CHECK(b.workers.sent[0].payload.dump() == R"({"run":"r7-abc"})");
}

TEST_CASE("run service: a run that does not fit in the queue is refused with 429, saying why") {
  Bench b;
  CHECK_FALSE(b.service.refuse(1000));
  auto req = b.service.request(body(kRequest, 1000000));
  REQUIRE(req.is_ok());
  b.service.submit({req->scenario, req->vars, req->count, std::nullopt, 1, std::nullopt, nullptr});
  b.service.submit({req->scenario, req->vars, req->count, std::nullopt, 1, std::nullopt, nullptr});
  auto refusal = b.service.refuse(1);
  REQUIRE(refusal);
  CHECK(refusal->status == 429);
  CHECK_THAT(refusal->why, Catch::Contains("queue full: 2000000 instances are waiting"));
}

namespace {

// A schedule every 5 minutes with catch_up, added a day ago: its last tick was missed.
corral::master::journal::ScheduleRow missed_row(uint32_t instances) {
  const int64_t day_ago = corral::unix_ms_now() - 86400 * 1000;
  corral::master::journal::ScheduleRow r;
  r.name = "five";
  r.cron = "*/5 * * * *";
  r.scenario = R"({"name": "ping", "steps": [{"request": {"url": "http://127.0.0.1:1/"}}]})";
  r.vars = "{}";
  r.instances = instances;
  r.catch_up = true;
  r.created_ms = day_ago;
  r.after_ms = day_ago;
  return r;
}

}  // namespace

TEST_CASE("schedule service: a tick caught up at start submits its run through the run service") {
  Bench b;
  uv_loop_t loop;
  REQUIRE(uv_loop_init(&loop) == 0);
  {
    corral::master::ScheduleService schedules(&loop, b.service, b.workers);
    schedules.restore(nullptr, {missed_row(7)}, corral::unix_ms_now());
    schedules.start();
    REQUIRE(b.runs.all().size() == 1);
    const Run& run = *b.runs.all().front();
    CHECK(run.size == 7);
    CHECK(b.workers.placements == 1);
    const auto* s = schedules.table().find("five");
    REQUIRE(s != nullptr);
    CHECK(s->last_run == run.id);
    schedules.stop();
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the timer's close
  CHECK(uv_loop_close(&loop) == 0);
}

TEST_CASE("schedule service: a tick whose run does not fit in the queue is skipped, not queued") {
  Bench b;
  auto req = b.service.request(body(kRequest, 1000000));
  REQUIRE(req.is_ok());
  for (int i = 0; i < 2; ++i) {
    b.service.submit(
        {req->scenario, req->vars, req->count, std::nullopt, 1, std::nullopt, nullptr});
  }
  uv_loop_t loop;
  REQUIRE(uv_loop_init(&loop) == 0);
  {
    corral::master::ScheduleService schedules(&loop, b.service, b.workers);
    schedules.restore(nullptr, {missed_row(7)}, corral::unix_ms_now());
    schedules.start();
    CHECK(b.runs.all().size() == 2);  // no third run
    CHECK(schedules.table().find("five")->last_run.empty());
    schedules.stop();
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}
