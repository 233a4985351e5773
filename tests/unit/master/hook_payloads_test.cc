// What the hook events send, when the journal's health makes an event, and how a webhook judges
// one try and paces the next.
#include <catch2/catch.hpp>

#include <csignal>

#include "master/hooks/payloads.h"
#include "master/hooks/webhook.h"

namespace corral::master {
namespace {

using config::HookEvent;
using nlohmann::json;

const HookSource kSource{"ci-7", 4242};
constexpr int64_t kAt = 1767607200000;  // 2026-01-05T10:00:00Z

TEST_CASE("hook payloads: worker_exit says which process ended, why, and what comes next") {
  WorkerExit w;
  w.slot = 1;
  w.pid = 31337;
  w.exit.reason = ExitReason::kSignal;
  w.exit.signal = SIGKILL;
  w.exit.at_unix_ms = kAt;
  w.restarts = 2;
  w.next_state = "backoff";
  w.restart_in_ms = 400;
  CHECK(worker_exit_payload(kSource, w) == json::parse(R"({
    "event": "worker_exit", "at": "2026-01-05T10:00:00Z", "host": "ci-7", "daemon_pid": 4242,
    "slot": 1, "pid": 31337, "reason": "signal", "code": 0, "signal": 9, "signal_name": "SIGKILL",
    "detail": "", "restarts": 2, "next_state": "backoff", "restart_in_ms": 400})"));

  w.exit = {ExitReason::kCrash, 3, 0, kAt, ""};
  w.next_state = "starting";
  w.restart_in_ms = -1;
  const json crash = worker_exit_payload(kSource, w);
  CHECK(crash["reason"] == "crash");
  CHECK(crash["code"] == 3);
  CHECK(crash["signal_name"] == "");
  CHECK_FALSE(crash.contains("restart_in_ms"));
}

TEST_CASE("hook payloads: run_finished gives the counts, whether all passed, and the duration") {
  const json detail = json::parse(R"({
    "id": "r3-a1b2", "scenario": "checkout", "state": "finished", "instances": 3,
    "created_at": "2026-01-05T09:59:58Z", "finished_at": "2026-01-05T10:00:00Z",
    "counts": {"queued": 0, "running": 0, "passed": 2, "failed": 1, "errored": 0,
               "cancelled": 0},
    "duration_ms": {"p50": 900, "p95": 1400, "max": 1400},
    "failures": [{"step": 1, "step_name": "pay", "reason": "HTTP 502", "count": 1}],
    "vars": {"base": "http://127.0.0.1:1"}})");
  const json p = run_finished_payload(kSource, detail, kAt - 2500, kAt);
  CHECK(p == json::parse(R"({
    "event": "run_finished", "at": "2026-01-05T10:00:00Z", "host": "ci-7", "daemon_pid": 4242,
    "run": "r3-a1b2", "scenario": "checkout", "state": "finished", "instances": 3,
    "counts": {"queued": 0, "running": 0, "passed": 2, "failed": 1, "errored": 0,
               "cancelled": 0},
    "all_passed": false, "duration_ms": 2500,
    "created_at": "2026-01-05T09:59:58Z", "finished_at": "2026-01-05T10:00:00Z",
    "instance_duration_ms": {"p50": 900, "p95": 1400, "max": 1400},
    "failures": [{"step": 1, "step_name": "pay", "reason": "HTTP 502", "count": 1}]})"));

  json passed = detail;
  passed["counts"]["passed"] = 3;
  passed["counts"]["failed"] = 0;
  CHECK(run_finished_payload(kSource, passed, kAt, kAt)["all_passed"] == true);
}

TEST_CASE("hook payloads: journal_failed and journal_recovered say since when and what failed") {
  journal::Journal::Health h;
  h.ok = false;
  h.error = "database or disk is full";
  h.failing_since_ms = kAt - 1000;
  h.queued = 120;
  const json failed = journal_failed_payload(kSource, "/srv/corral/journal.db", h, kAt);
  CHECK(failed == json::parse(R"({
    "event": "journal_failed", "at": "2026-01-05T10:00:00Z", "host": "ci-7",
    "daemon_pid": 4242, "path": "/srv/corral/journal.db", "error": "database or disk is full",
    "failing_since": "2026-01-05T09:59:59Z", "queued_writes": 120})"));

  journal::Journal::Health ok;
  ok.failed_batches = 7;
  const json back = journal_recovered_payload(kSource, "/j.db", ok, kAt - 60000, kAt);
  CHECK(back["event"] == "journal_recovered");
  CHECK(back["failing_since"] == "2026-01-05T09:59:00Z");
  CHECK(back["failed_for_ms"] == 60000);
  CHECK(back["failed_batches"] == 7);
}

TEST_CASE("hook payloads: the journal watch fires once per change of health, not per tick") {
  JournalWatch watch;
  journal::Journal::Health ok;
  journal::Journal::Health failing;
  failing.ok = false;
  failing.failing_since_ms = kAt;
  struct Step {
    const journal::Journal::Health* health;
    std::optional<HookEvent> event;
  };
  const Step steps[] = {
      {&ok, std::nullopt},      {&failing, HookEvent::kJournalFailed},
      {&failing, std::nullopt},  // still failing: said already
      {&failing, std::nullopt}, {&ok, HookEvent::kJournalRecovered},
      {&ok, std::nullopt},      {&failing, HookEvent::kJournalFailed},  // a new streak
  };
  int tick = 0;
  for (const Step& s : steps) {
    CAPTURE(tick++);
    CHECK(watch.observe(*s.health) == s.event);
  }
  CHECK(watch.failing_since_ms() == kAt);
}

TEST_CASE("hook payloads: a webhook's try is retried on transport errors, 5xx, 408 and 429") {
  struct Case {
    Result<http::HttpResult> result;
    bool ok;
    bool retry;
    const char* why;
  };
  auto status = [](int code) { return Result<http::HttpResult>(http::HttpResult{code, ""}); };
  const Case cases[] = {
      {status(200), true, false, "HTTP 200"},
      {status(204), true, false, "HTTP 204"},
      {status(500), false, true, "HTTP 500"},
      {status(503), false, true, "HTTP 503"},
      {status(408), false, true, "HTTP 408"},
      {status(429), false, true, "HTTP 429"},
      {status(301), false, false, "HTTP 301"},
      {status(404), false, false, "HTTP 404"},
      {Status(Code::kUnavailable, "Couldn't connect to server"), false, true,
       "Couldn't connect to server"},
      {Status(Code::kTimeout, "Timeout was reached"), false, true, "Timeout was reached"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.why);
    const TryVerdict v = judge_try(c.result);
    CHECK(v.ok == c.ok);
    CHECK(v.retry == c.retry);
    CHECK(v.why == c.why);
  }
}

TEST_CASE("hook payloads: retries wait 500 ms, then twice as long each time, at most 30 s") {
  CHECK(retry_delay_ms(2) == 500);
  CHECK(retry_delay_ms(3) == 1000);
  CHECK(retry_delay_ms(4) == 2000);
  CHECK(retry_delay_ms(8) == 30000);
  CHECK(retry_delay_ms(11) == 30000);
}

}  // namespace
}  // namespace corral::master
