// LoadDriver: the load models on a real engine, against corral-target and a scripted server on
// the same loop. Counts that the models fix (arrivals, iterations a pace allows) are checked
// exactly; times only from below, or against the arithmetic of a scripted stall.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "config/load/parse.h"
#include "tests/support/raw_http_server.h"
#include "tests/unit/worker/engine_fixture.h"
#include "worker/load/driver.h"

using namespace corral::test::engine;
using corral::ipc::LoadSecond;
using corral::worker::LoadDriver;
using corral::worker::LoadShare;

namespace {

corral::load::LoadSpec spec_of(const char* text) {
  auto r = corral::load::parse_load(json::parse(text));
  INFO(text);
  REQUIRE(r);
  return *r;
}

json one_get(const std::string& url) {
  return {{"name", "one get"}, {"steps", json::array({{{"name", "get"}, {"request", {{"url", url}}}}})}};
}

// Runs a driver to its end, collecting its seconds; the seconds added up are in `total`.
struct Run {
  Run(Fixture& f, const char* spec, const json& scenario, LoadShare share = {}) {
    driver = std::make_unique<LoadDriver>(&f.loop, *f.engine, "l1", spec_of(spec), share,
                                          [this](LoadSecond&& s) {
                                            total.add(s);
                                            seconds.push_back(std::move(s));
                                          });
    REQUIRE(driver->start(scenario, {{"base", f.base}}, 0).is_ok());
    REQUIRE(f.run_until([&] { return !seconds.empty() && seconds.back().done; }, 20000));
  }
  uint64_t requests() const {
    uint64_t n = 0;
    for (const auto& [i, s] : total.steps) n += s.requests;
    return n;
  }
  std::unique_ptr<LoadDriver> driver;
  std::vector<LoadSecond> seconds;
  LoadSecond total;
};

// Runs one VU (an iteration every 100 ms for 4 s) to its end; each report's second and when it
// came, in ms from `start_ns`. The last report (done) is kept only `with_last`.
std::vector<std::pair<uint32_t, uint64_t>> timed_reports(Fixture& f, uint64_t start_ns,
                                                         bool with_last) {
  std::vector<std::pair<uint32_t, uint64_t>> reports;
  bool done = false;
  LoadDriver driver(&f.loop, *f.engine, "l1",
                    spec_of(R"({"vus": 1, "pace": "100ms", "duration": "4s"})"), {},
                    [&](LoadSecond&& s) {
                      if (!s.done || with_last) {
                        reports.emplace_back(s.second, (uv_hrtime() - start_ns) / 1000000);
                      }
                      done = done || s.done;
                    });
  REQUIRE(driver.start(one_get("{{base}}/delay?ms=1"), {{"base", f.base}}, 0).is_ok());
  REQUIRE(f.run_until([&] { return done; }, 20000));
  return reports;
}

}  // namespace

TEST_CASE("load driver: a closed model keeps its VUs looping for the duration, second by second") {
  Fixture f;
  Run run(f, R"({"vus": 3, "duration": "1500ms"})", one_get("{{base}}/delay?ms=20"));
  REQUIRE(run.seconds.size() >= 2);
  CHECK(run.seconds[0].second == 0);
  CHECK(run.seconds[1].second == 1);
  CHECK(run.seconds[0].vus == 3);
  CHECK(run.seconds.back().done);
  CHECK(run.total.failed == 0);
  CHECK(run.total.interrupted == 0);
  // Each VU sends one request after another: at most 1500 / 20 each, and some.
  CHECK(run.requests() <= 3 * 1500 / 20 + 3);
  CHECK(run.requests() >= 30);
  CHECK(run.total.passed == run.requests());
  const auto& get = run.total.steps.at(0);
  CHECK(get.errors() == 0);
  // Microseconds; the server's 20 ms timer counts whole milliseconds of its loop's clock.
  CHECK(get.raw.min() >= 19000);
  CHECK(get.latency == get.raw);  // no schedule: nothing to correct
  CHECK(run.total.late.empty());
  CHECK(f.engine->active() == 0);
}

TEST_CASE("load driver: each second names its slowest requests, with their traces") {
  Fixture f;
  Run run(f, R"({"vus": 2, "duration": "1500ms"})", one_get("{{base}}/delay?ms=5"));
  std::set<std::string> traces;
  for (const LoadSecond& s : run.seconds) {
    CHECK(s.slowest.size() <= corral::ipc::kSlowestPerSecond);
    for (const auto& r : s.slowest) {
      CHECK(r.second == s.second);
      CHECK(r.us >= 4000);
      CHECK(r.status == 200);
      CHECK(r.outcome == "ok");
      CHECK(r.trace.size() == 32);
      traces.insert(r.trace);
    }
    // The slowest first, and none of the second's requests slower than the last kept.
    for (size_t i = 1; i < s.slowest.size(); ++i) CHECK(s.slowest[i - 1].us >= s.slowest[i].us);
  }
  CHECK(run.total.slowest.size() == corral::ipc::kSlowestPerTest);
  // The slowest of all is the histogram's largest (which keeps it to within its precision).
  CHECK(static_cast<double>(run.total.slowest.front().us) ==
        Approx(static_cast<double>(run.total.steps.at(0).latency.max())).epsilon(0.01));
  CHECK(traces.size() > 1);  // an iteration's own trace each
}

TEST_CASE("load driver: an open model starts exactly the arrivals its rate asks for") {
  Fixture f;
  Run run(f, R"({"rate": 200, "duration": "1s", "max_vus": 50})",
          one_get("{{base}}/delay?ms=5"));
  CHECK(run.total.dropped == 0);
  CHECK(run.total.passed + run.total.failed + run.total.interrupted == 200);
  CHECK(run.requests() == 200);
  CHECK(run.total.late.count() == 200);
}

TEST_CASE("load driver: arrivals with no free VU are dropped and counted, never delayed") {
  Fixture f;
  // One VU and 50 ms per iteration: at most about 20 of the 100 arrivals find it free.
  Run run(f, R"({"rate": 100, "duration": "1s", "max_vus": 1})", one_get("{{base}}/delay?ms=50"));
  CHECK(run.total.passed + run.total.failed + run.total.interrupted + run.total.dropped == 100);
  CHECK(run.total.passed <= 21);
  CHECK(run.total.dropped >= 79);
}

TEST_CASE("load driver: two workers' shares add up to the whole test") {
  Fixture f;
  const json scenario = one_get("{{base}}/delay?ms=1");
  Run a(f, R"({"rate": 300, "duration": "500ms"})", scenario, {0, 2, 0, 1});
  Run b(f, R"({"rate": 300, "duration": "500ms"})", scenario, {1, 2, 0, 1});
  CHECK(a.requests() + b.requests() == 150);
  CHECK(a.requests() == 75);
  Run c(f, R"({"vus": 5, "duration": "300ms"})", scenario, {0, 2, 0, 1});
  Run d(f, R"({"vus": 5, "duration": "300ms"})", scenario, {1, 2, 0, 1});
  CHECK(c.seconds[0].vus + d.seconds[0].vus == 5);
  CHECK(c.seconds[0].vus == 3);
}

TEST_CASE("load driver: hosts with different worker counts split the VUs and the rate once") {
  // Host 0 runs the test on 2 workers, host 1 on 3: every VU of the test is on one worker.
  std::set<uint64_t> vus;
  uint64_t parts = 0;
  for (uint32_t host = 0; host < 2; ++host) {
    const uint32_t workers = host == 0 ? 2 : 3;
    for (uint32_t w = 0; w < workers; ++w) {
      LoadShare s{w, workers, host, 2};
      parts += s.part(101);
      for (uint64_t vu = 0; vu < s.part(101); ++vu) vus.insert(s.test_vu(vu));
    }
  }
  CHECK(parts == 101);
  CHECK(vus.size() == 101);
  CHECK(*vus.rbegin() == 100);
  Fixture f;
  const json scenario = one_get("{{base}}/delay?ms=1");
  Run a(f, R"({"rate": 400, "duration": "500ms"})", scenario, {0, 1, 0, 2});
  Run b(f, R"({"rate": 400, "duration": "500ms"})", scenario, {0, 2, 1, 2});
  Run c(f, R"({"rate": 400, "duration": "500ms"})", scenario, {1, 2, 1, 2});
  CHECK(a.requests() == 100);
  CHECK(b.requests() + c.requests() == 100);
}

TEST_CASE("load driver: a stall shows in the corrected latency of every iteration it delayed") {
  // One VU, an iteration every 100 ms; the third answer takes 350 ms, every other one comes at
  // once. The VU keeps its schedule: iterations 4, 5 and 6 (intended at 300, 400, 500 ms) start
  // at about 350 + 200 = 550 ms, so their requests are fast but 250, 150 and 50 ms late.
  Fixture f;
  namespace t = corral::test;
  size_t seen = 0;
  t::RawHttpServer server(&f.loop, [&](const t::RawRequest&) {
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
    if (++seen == 3) return t::Script{t::wait_ms(350), t::send(ok)};
    return t::Script{t::send(ok)};
  });
  Run run(f, R"({"vus": 1, "pace": "100ms", "duration": "1s"})", one_get(server.url("/")));
  const auto& get = run.total.steps.at(0);
  CHECK(get.requests == 10);  // the pace allows exactly 10 in 1 s, and the VU catches up
  using corral::stats::Histogram;
  auto at_least = [](const Histogram& h, uint64_t ms) {
    return h.count() - h.count_at_or_below(ms * 1000 - 1);
  };
  // Raw: only the stalled request is slow.
  CHECK(at_least(get.raw, 300) == 1);
  CHECK(at_least(get.raw, 100) == 1);
  // Corrected: the stall (350 ms), then 250, 150 and 50 ms of lateness, within scheduling noise.
  CHECK(at_least(get.latency, 300) == 1);
  CHECK(at_least(get.latency, 200) == 2);
  CHECK(at_least(get.latency, 100) == 3);
  CHECK(at_least(get.latency, 30) == 4);
  CHECK(get.latency.max() >= 349000);  // the server's timer counts whole milliseconds
  // corral's own lateness leaves the stall out: those iterations started as soon as the VU was
  // free, the server made them late.
  CHECK(run.total.late.count() == 10);
  CHECK(run.total.late.max() < 30000);
}

// Known answers without a stall: a server that answers at once, VUs at a pace under, at and over
// the second from which the engine's own waits are batched on a 20 ms grid. Iterations start on
// time, so the corrected latency is the raw one to within 1 ms. One start in ten (at least two)
// may be late by more, for a machine that gave the test's loop no CPU for a moment: the checks
// are about the schedule, not about the machine, and the latency checks allow those starts too.
// With the 20 ms grid, every start after the first of each VU was late at 1 s and 5 s: two in three
// and one in two of them. Tagged [timing]: CTest runs these alone (tests/CMakeLists.txt), so that
// other tests do not take the CPU they measure.
void check_never_late(const char* spec, uint64_t requests) {
  Fixture f;
  namespace t = corral::test;
  t::RawHttpServer server(&f.loop, [&](const t::RawRequest&) {
    return t::Script{t::send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")};
  });
  Run run(f, spec, one_get(server.url("/")));
  const auto& get = run.total.steps.at(0);
  INFO(spec << ": start lateness p50 " << run.total.late.value_at(50) << " us, p99 "
            << run.total.late.value_at(99) << " us, max " << run.total.late.max() << " us; raw p99 "
            << get.raw.value_at(99) << " us, corrected p99 " << get.latency.value_at(99) << " us");
  CHECK(get.requests == requests);  // every VU as many times as the pace fits in
  CHECK(get.transport + get.status + get.timeout == 0);
  CHECK(run.total.late.count() == requests);
  const uint64_t allowed_late = std::max<uint64_t>(2, requests / 10);
  CHECK(run.total.late.count() - run.total.late.count_at_or_below(1000) <= allowed_late);
  // Corrected is raw plus lateness. With at most k of n starts late by over 1 ms, the corrected
  // value of rank r is at most the raw value of rank r + k, plus 1 ms: compare each corrected
  // percentile with the raw one k/n further up.
  const double shift = 100.0 * static_cast<double>(allowed_late) / static_cast<double>(requests);
  for (double q : {50.0, 90.0}) {
    INFO("percentile " << q << " against raw " << std::min(100.0, q + shift));
    CHECK(get.latency.value_at(q) <= get.raw.value_at(std::min(100.0, q + shift)) + 1000);
  }
}

TEST_CASE(
    "load driver: a server that never stalls gets corrected latency within 1 ms of raw, pace "
    "100ms",
    "[timing]") {
  check_never_late(R"({"vus": 10, "pace": "100ms", "duration": "2s"})", 200);
}

TEST_CASE(
    "load driver: a server that never stalls gets corrected latency within 1 ms of raw, pace 1s",
    "[timing]") {
  check_never_late(R"({"vus": 20, "pace": "1s", "duration": "3s"})", 60);
}

TEST_CASE(
    "load driver: a server that never stalls gets corrected latency within 1 ms of raw, pace 5s",
    "[timing]") {
  check_never_late(R"({"vus": 20, "pace": "5s", "duration": "10s"})", 40);
}

TEST_CASE("load driver: failing iterations are counted by class, with their reasons") {
  Fixture f;
  json scenario = one_get("{{base}}/fail?status=503");
  scenario["steps"].push_back({{"name", "checked"},
                               {"request", {{"url", "{{base}}/fail?status=404"}}},
                               {"expect", json::array({{{"status", 200}}})}});
  scenario["steps"][0]["retry"] = {{"attempts", 1}};
  Run run(f, R"({"vus": 1, "duration": "300ms"})", scenario);
  // The 503 fails no step (no expect): an error of class "status", and the iteration goes on to
  // the checked step, whose expect fails.
  const auto& first = run.total.steps.at(0);
  const auto& second = run.total.steps.at(1);
  CHECK(first.status == first.requests);
  CHECK(second.expect == second.requests);
  CHECK(second.status == 0);
  CHECK(run.total.failed == second.requests);
  CHECK(run.total.passed == 0);
  REQUIRE(run.total.reasons.size() == 1);
  CHECK_THAT(run.total.reasons.begin()->first, Catch::Contains("expect"));
}

TEST_CASE("load driver: iterations still running at the end are cut off after the grace period") {
  Fixture f;
  Run run(f, R"({"vus": 2, "duration": "200ms", "grace": "100ms"})",
          one_get("{{base}}/hang"));
  CHECK(run.total.interrupted == 2);
  CHECK(run.total.passed == 0);
  CHECK(f.engine->active() == 0);
}

TEST_CASE("load driver: held connections, one per VU for the whole test, from its source address") {
  Fixture f;
  namespace t = corral::test;
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  t::RawHttpServer server(&f.loop, [&](const t::RawRequest&) { return t::Script{t::send(ok)}; });
  json scenario = one_get(server.url("/msg"));
  Run run(f,
          R"({"connections": 4, "pace": "100ms", "duration": "1500ms",
              "source_addresses": ["127.0.0.2", "127.0.0.3"]})",
          scenario);
  // VU k starts at k * 25 ms and every 100 ms after: 15 iterations each, on its own connection.
  // The first second's report comes while they are all open.
  CHECK(run.total.passed == 60);
  CHECK(server.connections() == 4);
  for (size_t c = 0; c < 4; ++c) CHECK(server.requests_on(c) == 15);
  std::map<std::string, int> peers;
  for (const auto& r : server.requests()) {
    if (r.on_connection == 1) ++peers[r.peer];
  }
  CHECK(peers == std::map<std::string, int>{{"127.0.0.2", 2}, {"127.0.0.3", 2}});
  CHECK(run.seconds[0].connections == 4);
  CHECK(run.total.opened == 4);
  CHECK(run.total.closed == 0);
  CHECK(run.total.connect_failed == 0);
  CHECK(run.seconds.back().connections == 0);  // released at the end
  CHECK(f.run_until([&] { return server.open_connections() == 0; }));
}

TEST_CASE("load driver: a held connection the server closes is opened again and counted") {
  Fixture f;
  namespace t = corral::test;
  t::RawHttpServer server(&f.loop, [&](const t::RawRequest&) {
    return t::Script{t::send("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"),
                     t::close_connection()};
  });
  Run run(f, R"({"connections": 2, "pace": "100ms", "duration": "500ms"})",
          one_get(server.url("/msg")));
  CHECK(run.total.passed == 10);
  CHECK(server.connections() == 10);
  CHECK(run.total.opened == 10);
  CHECK(run.total.closed == 10);
}

TEST_CASE("load driver: a loop held past whole seconds reports them by the test's clock") {
  // The loop is held from 0.5 s to about 2.8 s (a machine that gave the worker no CPU): the
  // report due at 1 s comes at 2.8 s and is second 1, not second 0, so that it adds up with what
  // other workers saw in second 1; second 0 has nothing from this worker.
  Fixture f;
  uv_timer_t stall;
  uv_timer_init(&f.loop, &stall);
  uv_update_time(&f.loop);  // 500 ms from now, not from the loop's last turn
  uv_timer_start(
      &stall, [](uv_timer_t*) { std::this_thread::sleep_for(std::chrono::milliseconds(2300)); },
      500, 0);
  const auto reports = timed_reports(f, uv_hrtime(), /*with_last=*/true);
  uv_close(reinterpret_cast<uv_handle_t*>(&stall), nullptr);
  REQUIRE(reports.size() >= 3);
  CHECK(reports.front().second >= 2700);  // the held loop's first report
  for (size_t i = 0; i < reports.size(); ++i) {
    INFO("report " << i << ": second " << reports[i].first << " at " << reports[i].second << " ms");
    // The second that ended last when it was sent (200 ms for the test's own start-up), or a
    // later one; and each report a second of its own.
    CHECK(reports[i].first + 1 >= (reports[i].second - 200) / 1000);
    if (i > 0) CHECK(reports[i].first > reports[i - 1].first);
  }
}

TEST_CASE("load driver: a report waits for its second to end when the loop's clock runs behind") {
  // Two callbacks hold the loop in one turn: the first from 0.5 s to 1.2 s, the second (due at
  // 0.99 s, run in the same turn as the report due at 1 s) to 1.6 s. The report of second 0 then
  // sets the next timer while the loop's clock is 0.4 s behind: a libuv timer set then fired at
  // about 1.6 s, long before second 1 had ended. No report may come before the end of its second.
  Fixture f;
  uv_timer_t hold[2];
  const auto stall = [](uv_timer_t* t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(t->data)));
  };
  int hold_ms[2] = {700, 400};
  uv_update_time(&f.loop);
  for (int i = 0; i < 2; ++i) {
    uv_timer_init(&f.loop, &hold[i]);
    hold[i].data = &hold_ms[i];
    uv_timer_start(&hold[i], stall, i == 0 ? 500 : 990, 0);
  }
  const auto reports = timed_reports(f, uv_hrtime(), /*with_last=*/false);
  for (auto& h : hold) uv_close(reinterpret_cast<uv_handle_t*>(&h), nullptr);
  REQUIRE(reports.size() >= 3);
  for (size_t i = 0; i < reports.size(); ++i) {
    INFO("report " << i << ": second " << reports[i].first << " at " << reports[i].second << " ms");
    CHECK(reports[i].second >= (reports[i].first + 1) * 1000);
    CHECK(reports[i].first == i);  // a report for each second, in order
  }
}
