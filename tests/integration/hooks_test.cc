// Hooks as a user sees them: a real daemon posts run_finished, worker_exit and journal_failed
// to a receiver on 127.0.0.1, tries again after a 5xx, gives up on a receiver that never
// answers, runs command hooks with the payload on stdin, kills one past its timeout, counts
// every outcome in /metrics, and `corral config check` rejects a bad hook by its path.
#include <catch2/catch.hpp>

#include <signal.h>

#include <iostream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_receiver.h"
#include "tests/support/harness_runs.h"

namespace corral::test {
namespace {

// Instance i asks the job API for status 200 + i and expects 200: instance 0 passes, the
// others fail.
Json status_scenario() {
  return Json::parse(R"({"name": "statuses", "steps": [
      {"name": "ask", "request": {"url": "{{base}}/fail?status=20{{instance}}"},
       "expect": [{"status": 200}]}]})");
}

Json hook(const std::string& url, Json extra = Json::object()) {
  Json h = {{"url", url}};
  h.update(extra);
  return h;
}

double hooks_total(Daemon& d, const std::string& event, const std::string& result) {
  return metric_sample(d.api("GET", "/metrics").body,
                       "corral_hooks_total{event=\"" + event + "\",result=\"" + result + "\"}");
}

void wait_hooks_total(Daemon& d, const std::string& event, const std::string& result, double n) {
  d.wait_until([&] { return hooks_total(d, event, result) == n; }, seconds(20),
               "corral_hooks_total{event=" + event + ",result=" + result + "} to be " +
                   std::to_string(static_cast<int>(n)));
}

// Restarts slot 0 through the API and waits until it has a new, ready worker; returns the old
// one's pid.
pid_t restart_slot0(Daemon& d) {
  const pid_t old = d.wait_ready(1)[0].at("pid");
  REQUIRE(d.api("POST", "/workers/restart", R"({"slot": 0})").status == 200);
  d.wait_until([&] { return d.worker(0).at("pid") != old && d.worker(0).at("state") == "ready"; },
               seconds(20), "slot 0 to have a new ready worker");
  return old;
}

TEST_CASE(
    "hooks: a webhook gets run_finished with the run's counts, and worker_exit for a "
    "restart and for a kill") {
  TempHome home;
  JobApi api;
  WebhookReceiver receiver;
  Daemon d(home, DaemonOptions().with_workers(1).with_config(
                     {{"hooks",
                       {{"run_finished", hook(receiver.url("/runs"))},
                        {"worker_exit", Json::array({hook(receiver.url("/exits"))})}}}}));
  d.wait_ready(1);

  const std::string id = submit_run(d, status_scenario(), 3, api);
  const Json run = receiver.wait_for(
      "/runs", [&](const Json& b) { return b.value("run", "") == id; }, seconds(30),
      "run_finished for " + id);
  std::cout << "run_finished payload:\n" << run.dump(2) << "\n";
  CHECK(run["event"] == "run_finished");
  CHECK(run["state"] == "finished");
  CHECK(run["scenario"] == "statuses");
  CHECK(run["instances"] == 3);
  CHECK(run["counts"]["passed"] == 1);
  CHECK(run["counts"]["failed"] == 2);
  CHECK(run["all_passed"] == false);
  CHECK(run["daemon_pid"] == d.pid());
  CHECK(run["duration_ms"].get<int64_t>() >= 0);
  REQUIRE(run["failures"].size() == 2);  // one group per status

  const pid_t restarted = restart_slot0(d);
  const Json stopped = receiver.wait_for(
      "/exits", [&](const Json& b) { return b["pid"] == restarted; }, seconds(20),
      "worker_exit for the restarted pid " + std::to_string(restarted));
  std::cout << "worker_exit payload (restart):\n" << stopped.dump(2) << "\n";
  CHECK(stopped["event"] == "worker_exit");
  CHECK(stopped["slot"] == 0);
  CHECK(stopped["reason"] == "stopped");
  CHECK(stopped["next_state"] == "starting");

  const pid_t killed = d.worker(0).at("pid");
  REQUIRE(::kill(killed, SIGKILL) == 0);
  const Json signalled = receiver.wait_for(
      "/exits", [&](const Json& b) { return b["pid"] == killed; }, seconds(20),
      "worker_exit for the killed pid " + std::to_string(killed));
  std::cout << "worker_exit payload (kill -9):\n" << signalled.dump(2) << "\n";
  CHECK(signalled["reason"] == "signal");
  CHECK(signalled["signal"] == SIGKILL);
  CHECK(signalled["signal_name"] == "SIGKILL");
  CHECK(signalled["restarts"] == 1);
  CHECK(signalled["next_state"] == "backoff");
  CHECK(signalled["restart_in_ms"].get<int64_t>() >= 0);

  CHECK(hooks_total(d, "run_finished", "ok") == 1);
  CHECK(hooks_total(d, "worker_exit", "ok") == 2);
  CHECK(hooks_total(d, "worker_exit", "failed") == 0);
  for (const WebhookReceiver::Received& r : receiver.received()) {
    CHECK_THAT(r.head, Catch::StartsWith("POST "));
    CHECK_THAT(r.head, Catch::Contains("Content-Type: application/json"));
  }

  // A graceful stop sends the last worker's exit before the daemon ends.
  const pid_t last = d.wait_ready(1)[0].at("pid");
  d.signal(SIGTERM);
  REQUIRE(d.wait_exit(seconds(20)) == 0);
  bool told = false;
  for (const Json& b : receiver.bodies("/exits")) {
    if (b["pid"] != last) continue;
    told = true;
    CHECK(b["reason"] == "stopped");
    CHECK(b["next_state"] == "exited");
  }
  CHECK(told);
}

TEST_CASE("hooks: a webhook answered 500 twice is tried again and delivered once") {
  TempHome home;
  WebhookReceiver receiver([](const std::string&, size_t n) { return n <= 2 ? 500 : 200; });
  Daemon d(home, DaemonOptions().with_workers(1).with_config(
                     {{"hooks",
                       {{"worker_exit",
                         hook(receiver.url("/flaky"),
                              {{"retries", 3}, {"headers", {{"X-Corral-Token", "s3cret"}}}})}}}}));
  restart_slot0(d);
  wait_hooks_total(d, "worker_exit", "ok", 1);
  const std::vector<WebhookReceiver::Received> got = receiver.received();
  REQUIRE(got.size() == 3);
  CHECK(got[0].body == got[2].body);  // the same payload each time
  CHECK_THAT(got[2].head, Catch::Contains("X-Corral-Token: s3cret"));
  CHECK(hooks_total(d, "worker_exit", "failed") == 0);
  // Tries that fail are not failures of the hook; the header's value is never logged.
  CHECK(read_file(home.master_log()).find("s3cret") == std::string::npos);
}

TEST_CASE("hooks: a webhook whose receiver never answers times out, is logged and counted") {
  TempHome home;
  WebhookReceiver receiver([](const std::string&, size_t) { return 0; });
  const std::string url = receiver.url("/silent");
  Daemon d(
      home,
      DaemonOptions().with_workers(1).with_config(
          {{"hooks",
            {{"worker_exit", hook(url + "?token=abc", {{"retries", 1}, {"timeout", "300ms"}})}}}}));
  restart_slot0(d);
  wait_hooks_total(d, "worker_exit", "failed", 1);
  CHECK(receiver.received().size() == 2);  // the first try and one retry
  CHECK(hooks_total(d, "worker_exit", "ok") == 0);
  const std::string log = read_file(home.master_log());
  CHECK_THAT(
      log, Catch::Contains("hook worker_exit: " + url + " failed: Timeout was reached (2 tries)"));
  CHECK(log.find("token=abc") == std::string::npos);  // a query may hold a secret
}

TEST_CASE("hooks: a receiver that never answers cannot hold a graceful stop past stop_grace") {
  TempHome home;
  WebhookReceiver receiver([](const std::string&, size_t) { return 0; });
  Daemon d(home, DaemonOptions().with_workers(1).with_config(
                     {{"stop_grace", "1s"},
                      {"hooks",
                       {{"worker_exit",
                         hook(receiver.url("/silent"), {{"retries", 0}, {"timeout", "1h"}})}}}}));
  d.wait_ready(1);
  const auto asked = Clock::now();
  d.signal(SIGTERM);
  CHECK(d.wait_exit(seconds(20)) == 0);
  // The worker's stop, then what is left of the second, then libcurl's next progress call.
  CHECK(Clock::now() - asked < seconds(4));
  CHECK(receiver.received().size() == 1);
  CHECK_THAT(read_file(home.master_log()), Catch::Contains("abandoned: the daemon stopped"));
}

TEST_CASE(
    "hooks: a command hook gets the payload on stdin and the event in CORRAL_EVENT, and one "
    "past its timeout is killed and counted as failed") {
  TempHome home;
  const std::string out = home.file("hook.out");
  Daemon d(home,
           DaemonOptions().with_workers(1).with_config(
               {{"hooks",
                 {{"worker_exit",
                   Json::array(
                       {{{"command",
                          {"/bin/sh", "-c", "cat > " + out + "; echo $CORRAL_EVENT >> " + out}}},
                        {{"command", {"/bin/sh", "-c", "sleep 30"}}, {"timeout", "300ms"}}})}}}}));
  const pid_t old = restart_slot0(d);
  wait_hooks_total(d, "worker_exit", "ok", 1);
  wait_hooks_total(d, "worker_exit", "failed", 1);
  const std::string text = read_file(out);
  const size_t newline = text.find('\n');
  REQUIRE(newline != std::string::npos);
  const Json payload = Json::parse(text.substr(0, newline));
  std::cout << "worker_exit payload (command stdin):\n" << payload.dump(2) << "\n";
  CHECK(payload["event"] == "worker_exit");
  CHECK(payload["pid"] == old);
  CHECK(text.substr(newline + 1) == "worker_exit\n");
  CHECK_THAT(read_file(home.master_log()),
             Catch::Contains("hook worker_exit: /bin/sh failed: timed out after 300ms: killed"));
}

TEST_CASE("hooks: a journal that cannot be written fires journal_failed") {
  TempHome home;
  JobApi api;
  WebhookReceiver receiver;
  // 40 pages of 4 KiB: the schema (32 pages) fits, a run of 300 instances does not
  // (journal_test.cc).
  Daemon d(home,
           DaemonOptions()
               .with_workers(1)
               .with_env("CORRAL_TEST_JOURNAL_MAX_PAGES", "40")
               .with_config({{"hooks", {{"journal_failed", hook(receiver.url("/journal"))}}}}));
  d.wait_ready(1);
  submit_run(d, job_poll_scenario("fill", 0, "100ms"), 300, api);
  const Json failed = receiver.wait_for(
      "/journal", [](const Json& b) { return b["event"] == "journal_failed"; }, seconds(60),
      "journal_failed");
  std::cout << "journal_failed payload:\n" << failed.dump(2) << "\n";
  CHECK(failed["path"] == home.file("journal.db"));
  CHECK_THAT(failed["error"].get<std::string>(), Catch::Contains("database or disk is full"));
  // Once per streak of failures, not once per failed batch.
  hold_for([&] { return receiver.bodies("/journal").size() == 1; }, milliseconds(2500),
           "a single journal_failed");
}

TEST_CASE("hooks: config check rejects a bad hook with a message that names the field") {
  TempHome home;
  const std::string bad_url = home.write_config(
      {{"hooks",
        {{"worker_exit",
          Json::array({hook("http://127.0.0.1:9/ok"), hook("ftp://127.0.0.1/x")})}}}});
  CliResult r = run_cli({"config", "check", bad_url}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 2);
  CHECK(r.err == "corral: " + bad_url +
                     ": hooks.worker_exit[1].url: expected an http:// or https:// URL, got "
                     "\"ftp://127.0.0.1/x\"\n");

  const std::string bad_event =
      home.write_config({{"hooks", {{"run_finsihed", hook("http://127.0.0.1:9/ok")}}}});
  r = run_cli({"config", "check", bad_event}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(R"(hooks: unknown event "run_finsihed" (did you mean )"
                                    R"("run_finished"?))"));
  // The daemon refuses it the same way.
  CliResult daemon = run_cli({"daemon", "--config", bad_event, "--listen", "off"}, home.path());
  CHECK(daemon.exit_code != 0);
  CHECK_THAT(daemon.err, Catch::Contains(R"(unknown event "run_finsihed")"));
}

}  // namespace
}  // namespace corral::test
