// The engine against a real HTTP server (corral-target's job API) on the same loop: the
// fixture the engine's unit tests share.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <vector>

#include "shared/proc.h"
#include "tools/target/target.h"
#include "worker/engine/engine.h"
#include "worker/http/curl_client.h"
#include "worker/http/lean_client.h"

namespace corral::test::engine {

using corral::ipc::Checkpoint;
using corral::worker::CurlClient;
using corral::worker::LeanClient;
using corral::worker::Engine;
using nlohmann::json;

struct Fixture {
  explicit Fixture(corral::worker::ClientOptions opts = {}) {
    uv_loop_init(&loop);
    target = std::make_unique<corral::target::Target>(&loop);
    REQUIRE(target->listen("127.0.0.1", 0).is_ok());
    base = "http://127.0.0.1:" + std::to_string(target->port());
    // The worker's default: the lean client for http://, curl for the rest.
    curl = std::make_unique<CurlClient>(&loop, opts, &budget);
    http = std::make_unique<LeanClient>(&loop, opts, *curl, budget);
    engine = std::make_unique<Engine>(
        &loop, *http,
        [this](corral::ipc::Event&& ev) {
          json j = to_json(ev);
          if (throw_when && throw_when(j)) throw std::runtime_error("emit failed on purpose");
          events.push_back(std::move(j));
        },
        secrets);
  }
  ~Fixture() {
    engine.reset();
    http.reset();
    curl.reset();
    target.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }

  // Runs the loop until `done` holds or `timeout_ms` passes; returns whether it held.
  bool run_until(const std::function<bool()>& done, uint64_t timeout_ms = 10000) {
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(
        &tick, [](uv_timer_t*) {}, 10, 10);
    uint64_t deadline = corral::monotonic_ms() + timeout_ms;
    while (!done() && corral::monotonic_ms() < deadline) uv_run(&loop, UV_RUN_ONCE);
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);
    return done();
  }

  void start(const json& scenario, uint32_t instances = 1, Checkpoint cp = {}) {
    auto s = engine->define_run("r1", scenario, {{"base", base}});
    INFO(s.message());
    REQUIRE(s.is_ok());
    for (uint32_t i = 0; i < instances; ++i) REQUIRE(engine->start("r1", i, cp).is_ok());
  }

  std::vector<json> of(const char* t, uint32_t i = 0) const {
    std::vector<json> out;
    for (const auto& e : events) {
      if (e["t"] == t && e["i"] == i) out.push_back(e);
    }
    return out;
  }
  size_t done_count() const {
    size_t n = 0;
    for (const auto& e : events) n += e["t"] == "done" ? 1 : 0;
    return n;
  }

  uv_loop_t loop;
  corral::Secrets secrets;
  std::unique_ptr<corral::target::Target> target;
  corral::worker::BodyBudget budget;
  std::unique_ptr<CurlClient> curl;
  std::unique_ptr<LeanClient> http;
  std::unique_ptr<Engine> engine;
  std::string base;
  std::vector<json> events;
  // When set, emit throws for the events it returns true for (a failure inside the engine).
  std::function<bool(const json&)> throw_when;
};

inline json job_scenario(int polls_to_done, bool fail, const std::string& timeout = "10s") {
  return json::parse(R"({
    "name": "job",
    "steps": [
      {"name": "start", "request": {"method": "POST", "url": "{{base}}/jobs",
                                    "json": {"polls_to_done": )" +
                     std::to_string(polls_to_done) + R"(, "fail": )" + (fail ? "true" : "false") +
                     R"(}},
       "expect": [{"status": 201}], "capture": {"job": {"json": "/id"}}},
      {"name": "wait", "request": {"url": "{{base}}/jobs/{{job}}"},
       "poll": {"every": "20ms", "timeout": ")" +
                     timeout + R"(",
                "until": [{"json": "/status", "equals": "done"}],
                "fail_if": [{"json": "/status", "equals": "failed"}]}},
      {"name": "rest", "sleep": "30ms"}
    ]})");
}

}  // namespace corral::test::engine
