// Nothing lost: the journal keeps every run across a master killed with SIGKILL, a graceful
// stop and start, and workers that die; runs resume where they were.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"
#include "tests/support/pg_server.h"

using namespace corral::test;

namespace {

// Three steps: start a job that is done after `job_ms`, poll it every 200 ms, then a job done
// after 3 polls, polled every 200 ms.
Json two_jobs(int job_ms) {
  return Json::parse(R"({
    "name": "two-jobs",
    "steps": [
      {"name": "start A", "request": {"method": "POST", "url": "{{base}}/jobs",
                                      "json": {"done_after_ms": )" +
                     std::to_string(job_ms) + R"(}},
       "expect": [{"status": 201}], "capture": {"a": {"json": "/id"}}},
      {"name": "wait for A", "request": {"url": "{{base}}/jobs/{{a}}"},
       "poll": {"every": "200ms", "timeout": "2m",
                "until": [{"json": "/status", "equals": "done"}]}},
      {"name": "start B", "request": {"method": "POST", "url": "{{base}}/jobs",
                                      "json": {"polls_to_done": 3}},
       "expect": [{"status": 201}], "capture": {"b": {"json": "/id"}}},
      {"name": "wait for B", "request": {"url": "{{base}}/jobs/{{b}}"},
       "poll": {"every": "200ms", "timeout": "2m",
                "until": [{"json": "/status", "equals": "done"}]}}
    ]})");
}

// Waits until every instance of the run has finished its first step, in the journal too.
void wait_first_step(Daemon& d, const std::string& id, int n) {
  d.wait_until(
      [&] {
        Json all = d.api("GET", "/runs/" + id + "/instances?limit=" + std::to_string(n)).json;
        for (const Json& in : all["instances"]) {
          if (in["step"].get<int>() < 1) return false;
        }
        return all["instances"].size() == static_cast<size_t>(n);
      },
      seconds(20), "every instance of " + id + " to finish its first step");
  // The API shows the daemon's memory; the journal follows a few milliseconds behind.
  d.wait_until([&] { return d.health()["journal"]["queued_writes"] == 0; }, seconds(10),
               "the journal to catch up");
}

// Kills the daemon with SIGKILL and starts a new one on the same home.
std::unique_ptr<Daemon> kill_and_restart(std::unique_ptr<Daemon> d, const TempHome& home,
                                         DaemonOptions opts) {
  d->signal(SIGKILL);
  d->wait_exit(seconds(10));
  d.reset();
  return std::make_unique<Daemon>(home, std::move(opts));
}

int run_number(const std::string& id) { return std::stoi(id.substr(1, id.find('-') - 1)); }

}  // namespace

TEST_CASE("journal: a new daemon on the same home resumes a run whose master was killed") {
  TempHome home;
  JobApi api;
  auto opts = DaemonOptions().with_workers(2);
  auto d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(2);
  std::string id = submit_run(*d, two_jobs(1500), 300, api);
  wait_first_step(*d, id, 300);
  d = kill_and_restart(std::move(d), home, opts);
  d->wait_ready(2);
  wait_run_finished(*d, id, seconds(60));
  Json run = run_of(*d, id);
  CHECK(run["counts"]["passed"] == 300);
  Json all = instances_of(*d, id, 300);
  REQUIRE(all.size() == 300);
  for (const Json& in : all) {
    INFO("instance " << in["i"]);
    CHECK(history_problem(in, 4) == "");
  }
  // Each was running when the master died, and resumed once.
  CHECK(count_resume_reason(all, "master_restart") == 300);
  // Run numbers go on from the journal: the next run is not r1 again.
  std::string next = submit_run(*d, two_jobs(0), 1, api);
  CHECK(run_number(next) > run_number(id));
  Json listed = d->api("GET", "/runs").json["runs"];
  REQUIRE(listed.size() == 2);
  CHECK(listed[1]["id"] == id);
}

TEST_CASE(
    "journal: a graceful stop checkpoints running instances and the next start resumes "
    "them") {
  TempHome home;
  JobApi api;
  auto opts = DaemonOptions().with_workers(2);
  auto d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(2);
  std::string id = submit_run(*d, two_jobs(2000), 200, api);
  wait_first_step(*d, id, 200);
  d->signal(SIGTERM);  // what `corral stop` and systemd do
  CHECK(d->wait_exit(seconds(20)) == 0);
  d = std::make_unique<Daemon>(home, opts);
  wait_run_finished(*d, id, seconds(60));
  CHECK(run_of(*d, id)["counts"]["passed"] == 200);
  Json all = instances_of(*d, id, 200);
  for (const Json& in : all) {
    INFO("instance " << in["i"]);
    CHECK(history_problem(in, 4) == "");
  }
  CHECK(count_resume_reason(all, "master_stopped") == 200);
}

TEST_CASE("journal: a poll whose timeout passes while the master is down ends timed out") {
  TempHome home;
  JobApi api;
  auto opts = DaemonOptions().with_workers(1);
  auto d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(1);
  Json never = Json::parse(R"({"name": "never-done", "steps": [
      {"name": "start", "request": {"method": "POST", "url": "{{base}}/jobs",
                                    "json": {"polls_to_done": 1000000}},
       "capture": {"a": {"json": "/id"}}},
      {"name": "wait", "request": {"url": "{{base}}/jobs/{{a}}"},
       "poll": {"every": "100ms", "timeout": "1500ms",
                "until": [{"json": "/status", "equals": "done"}]}}]})");
  std::string id = submit_run(*d, never, 5, api);
  // Wait until every instance is polling (step 0 recorded), then take the master down.
  wait_first_step(*d, id, 5);
  Json before = instances_of(*d, id, 5);
  d->signal(SIGKILL);
  d->wait_exit(seconds(10));
  // The poll's deadline (1.5 s after its step began) passes while nothing runs.
  auto down_since = Clock::now();
  wait_for([&] { return Clock::now() - down_since > milliseconds(2000); }, seconds(5),
           "the poll deadline to pass while the master is down");
  d = std::make_unique<Daemon>(home, opts);
  wait_run_finished(*d, id, seconds(30));
  Json run = run_of(*d, id);
  CHECK(run["counts"]["failed"] == 5);
  REQUIRE(run["failures"].size() == 1);
  CHECK(run["failures"][0]["reason"] == "poll timed out after 1500ms");
  for (const Json& in : instances_of(*d, id, 5)) {
    REQUIRE(in["steps"].size() == 2);
    CHECK(in["steps"][1]["state"] == "failed");
    CHECK(in["resume_reasons"] == Json::array({"master_restart"}));
    // The step kept the start it had before the master died: its clock did not restart, so
    // it ran for the downtime at least, and ended at once after the restart.
    CHECK(in["steps"][1]["started_at"] == before[in["i"].get<int>()]["steps"][0]["ended_at"]);
    CHECK(in["steps"][1]["duration_ms"].get<int64_t>() >= 2000);
  }
}

TEST_CASE(
    "journal: an instance that crashes every worker it runs on ends errored after "
    "max_resumes, and the others pass") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions()
                     .with_workers(2)
                     .with_config({{"max_resumes", 2}, {"backoff_max", "200ms"}})
                     .with_env("CORRAL_TEST_POISON_INSTANCE", "7"));
  d.wait_ready(2);
  std::string id = submit_run(d, two_jobs(300), 40, api);
  wait_run_finished(d, id, seconds(60));
  Json run = run_of(d, id);
  CHECK(run["counts"]["passed"] == 39);
  CHECK(run["counts"]["errored"] == 1);
  Json poison = d.api("GET", "/runs/" + id + "/instances/7").json;
  CHECK(poison["state"] == "errored");
  CHECK(poison["reason"] == "its worker died with it 3 times (worker_signal); max_resumes is 2");
  CHECK(poison["resumes"] == 2);
  int restarts = 0;
  for (const Json& w : d.workers()) restarts += w["restarts"].get<int>();
  CHECK(restarts == 3);  // one per crash: nothing else brought a worker down
}

TEST_CASE("journal: a journal in a read-only directory is a clear error at start") {
  TempHome home;
  std::string dir = home.file("readonly");
  REQUIRE(mkdir(dir.c_str(), 0555) == 0);
  std::string config = home.write_config({{"journal", dir + "/journal.db"}});
  // Root writes through permission bits: make the directory read-only for real with a
  // read-only bind mount in a private mount namespace.
  CliResult r;
  if (geteuid() == 0) {
    std::string cmd = "mount --bind -o ro " + dir + " " + dir + " && exec " + corral_binary() +
                      " daemon --config " + config + " --listen off";
    r = run_program("/usr/bin/unshare", {"--mount", "sh", "-c", cmd}, home.path());
  } else {
    r = run_cli({"daemon", "--config", config, "--listen", "off"}, home.path());
  }
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err,
             Catch::Contains("journal " + dir + "/journal.db: unable to open database file"));
  CHECK_THAT(r.err, Catch::Contains("corral must be able to create and write files"));
}

TEST_CASE(
    "journal: retention keeps the newest keep_runs finished runs, across restarts, and "
    "corral prune forgets older ones") {
  TempHome home;
  JobApi api;
  auto opts = DaemonOptions().with_workers(1).with_config({{"keep_runs", 2}});
  auto d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(1);
  std::vector<std::string> ids;
  for (int k = 0; k < 3; ++k) {
    ids.push_back(submit_run(*d, two_jobs(0), 2, api));
    wait_run_finished(*d, ids.back(), seconds(30));
  }
  auto listed = [&] {
    std::vector<std::string> out;
    const Json runs = d->api("GET", "/runs").json["runs"];
    for (const Json& r : runs) out.push_back(r["id"]);
    return out;
  };
  wait_for([&] { return listed().size() == 2; }, seconds(10), "retention to keep 2 runs",
           [&] { return d->api("GET", "/runs").body; });
  CHECK(listed() == std::vector<std::string>{ids[2], ids[1]});
  CHECK(d->api("GET", "/runs/" + ids[0]).status == 404);
  // The third run's last rows and the first one's deletion are committed a few milliseconds
  // after the API shows them; a kill before that resumes the third run (tested above).
  d->wait_until([&] { return d->health()["journal"]["queued_writes"] == 0; }, seconds(10),
                "the journal to catch up");

  d = kill_and_restart(std::move(d), home, opts);
  CHECK(listed() == std::vector<std::string>{ids[2], ids[1]});
  // The journal gives back a finished run's instances after the restart.
  Json in = d->api("GET", "/runs/" + ids[1] + "/instances/1").json;
  CHECK(history_problem(in, 4) == "");

  CliResult none = run_cli({"prune", "--older-than", "1h"}, home.path());
  INFO(none.describe());
  CHECK(none.exit_code == 0);
  CHECK(none.out == "corral: pruned 0 finished runs\n");
  CliResult all = run_cli({"prune", "--older-than", "1ms"}, home.path());
  INFO(all.describe());
  CHECK(all.out == "corral: pruned 2 finished runs\n");
  CHECK(listed().empty());
  CliResult soon = run_cli({"prune", "--older-than", "soon"}, home.path());
  CHECK(soon.exit_code == 2);  // a usage error, named by its flag
  CHECK(soon.err == "corral: --older-than soon: expected a duration like 7d or 12h\n");

  d = kill_and_restart(std::move(d), home, opts);
  CHECK(listed().empty());  // gone from the journal too
}

TEST_CASE("journal: a full journal is reported by /health and /metrics, and runs go on") {
  TempHome home;
  JobApi api;
  // The journal may grow to 40 pages of 4 KiB: the schema (32 pages) fits, a run of 300
  // instances does not.
  Daemon d(home, DaemonOptions().with_workers(1).with_env("CORRAL_TEST_JOURNAL_MAX_PAGES", "40"));
  d.wait_ready(1);
  CHECK(d.health()["journal"]["ok"] == true);
  std::string id = submit_run(d, two_jobs(0), 300, api);
  wait_run_finished(d, id, seconds(60));
  CHECK(run_of(d, id)["counts"]["passed"] == 300);  // the run itself is not held up
  d.wait_until([&] { return d.health()["status"] == "degraded"; }, seconds(10),
               "/health to report the journal");
  Json journal = d.health()["journal"];
  CHECK(journal["ok"] == false);
  CHECK_THAT(journal["error"].get<std::string>(), Catch::Contains("database or disk is full"));
  CHECK(journal["queued_writes"].get<int>() > 0);  // kept, to be written when there is room
  std::string metrics = d.api("GET", "/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("corral_journal_ok 0"));
  CHECK_THAT(metrics, Catch::Contains("corral_instances{state=\"passed\"} 300"));
  Json body = {{"scenario", two_jobs(0)}, {"instances", 1}, {"vars", {{"base", api.base()}}}};
  auto more = d.api("POST", "/runs", body.dump());
  CHECK(more.status == 201);
  CHECK_THAT(more.json["warning"].get<std::string>(),
             Catch::StartsWith("the journal cannot be written: "));
  CHECK_THAT(read_file(home.master_log()), Catch::Contains("journal: a write failed"));
}

TEST_CASE("journal: past journal_max_queued writes not saved, new runs are refused with 503") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions()
                     .with_workers(1)
                     .with_env("CORRAL_TEST_JOURNAL_MAX_PAGES", "40")
                     .with_config({{"journal_max_queued", 100}}));
  d.wait_ready(1);
  std::string id = submit_run(d, two_jobs(0), 300, api);
  wait_run_finished(d, id, seconds(60));
  CHECK(run_of(d, id)["counts"]["passed"] == 300);  // what runs goes on past the bound
  d.wait_until([&] { return d.health()["journal"]["queued_writes"].get<int>() >= 100; },
               seconds(10), "the journal's unsaved writes to pass the bound");
  Json body = {{"scenario", two_jobs(0)}, {"instances", 1}, {"vars", {{"base", api.base()}}}};
  auto refused = d.api("POST", "/runs", body.dump());
  CHECK(refused.status == 503);
  CHECK_THAT(refused.json["error"].get<std::string>(),
             Catch::StartsWith("the journal cannot be written (") &&
                 Catch::Contains("database or disk is full") &&
                 Catch::Contains("journal_max_queued is 100"));
  CHECK(d.api("GET", "/runs").json["runs"].size() == 1);
}

TEST_CASE("journal: a journal file that is not a database is a clear error at start") {
  TempHome home;
  { std::ofstream(home.file("journal.db")) << "these are not the pages you are looking for\n"; }
  CliResult r = run_cli({"daemon", "--listen", "off"}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err,
             Catch::Contains("journal " + home.file("journal.db") + ": file is not a database"));
  CHECK(read_file(home.file("journal.db")) == "these are not the pages you are looking for\n");
}

// A finished run restored at start is held as a summary; its instances are read back from the
// journal a page at a time, and the answer says where to ask from for more.
TEST_CASE("journal: a restored run's instances are read back in pages, with a cursor") {
  TempHome home;
  JobApi api;
  auto opts = DaemonOptions().with_workers(2);
  auto d = std::make_unique<Daemon>(home, opts);
  d->wait_ready(2);
  constexpr int kInstances = 12000;
  Json steps = Json::parse(R"([{"name": "get", "request": {"url": "{{base}}/jobs/none"},
                                 "expect": [{"status": 404}]}])");
  Json scenario = {{"name", "pages"}, {"steps", steps}};
  std::string id = submit_run(*d, scenario, kInstances, api);
  wait_run_finished(*d, id, seconds(60));
  REQUIRE(run_of(*d, id)["counts"]["passed"] == kInstances);
  d->wait_until([&] { return d->health()["journal"]["queued_writes"] == 0; }, seconds(10),
                "the journal to catch up");
  d = kill_and_restart(std::move(d), home, opts);
  d->wait_ready(2);

  Json first = d->api("GET", "/runs/" + id + "/instances?limit=3000").json;
  INFO(first.dump().substr(0, 400));
  REQUIRE(first["instances"].size() == 3000);
  CHECK(first["instances"][0]["i"] == 0);
  CHECK(first["instances"][2999]["i"] == 2999);
  CHECK(first["instances"][2999]["state"] == "passed");
  CHECK(first["next"] == 3000);
  Json rest = d->api("GET", "/runs/" + id + "/instances?limit=3000&from=9500").json;
  REQUIRE(rest["instances"].size() == 2500);
  CHECK(rest["instances"][0]["i"] == 9500);
  CHECK(rest["next"].is_null());
  CHECK(d->api("GET", "/runs/" + id + "/instances?state=failed").json["instances"].empty());
  Json one = d->api("GET", "/runs/" + id + "/instances/4321").json;
  CHECK(one["i"] == 4321);
  CHECK(one["steps"].size() == 1);
  CHECK(one["steps"][0]["status"] == 404);
  CHECK(d->api("GET", "/runs/" + id + "/instances/12000").status == 404);
  CHECK(d->api("GET", "/runs/" + id + "/instances?from=x").status == 400);
  // One answer lists at most 10,000: a caller cannot have the daemon build a gigabyte of JSON.
  Json capped = d->api("GET", "/runs/" + id + "/instances?limit=4294967295&from=0").json;
  CHECK(capped["instances"].size() == 10000);
  CHECK(capped["next"] == 10000);
}

TEST_CASE("journal: on PostgreSQL, a daemon on another home resumes the run of one killed") {
  PgDatabase db;
  // A password in the URL (the test server trusts local connections and ignores it) is never
  // shown.
  const std::string url = db.url() + "&password=s3cret";
  TempHome first_home, second_home;
  JobApi api;
  auto opts = DaemonOptions().with_workers(2).with_args({"--journal", url});
  auto d = std::make_unique<Daemon>(first_home, opts);
  d->wait_ready(2);
  Json journal = d->health()["journal"];
  CHECK(journal["path"] == db.url() + "&password=***");
  CHECK(journal.dump().find("s3cret") == std::string::npos);
  std::string id = submit_run(*d, two_jobs(1500), 100, api);
  wait_first_step(*d, id, 100);
  d->signal(SIGKILL);
  d->wait_exit(seconds(10));
  d.reset();
  // Nothing of the run is in either home: it is all in the database.
  auto again = std::make_unique<Daemon>(second_home, opts);
  again->wait_ready(2);
  wait_run_finished(*again, id, seconds(60));
  CHECK(run_of(*again, id)["counts"]["passed"] == 100);
  Json all = instances_of(*again, id, 100);
  REQUIRE(all.size() == 100);
  for (const Json& in : all) {
    INFO("instance " << in["i"]);
    CHECK(history_problem(in, 4) == "");
  }
  // Its ranges were released when its host was declared dead, and claimed by the new one.
  CHECK(count_resume_reason(all, "host_lost") == 100);
  CHECK(db.sql("SELECT COUNT(*) FROM instances WHERE run_id = '" + id + "' AND state = 'passed'") ==
        "100");
  CHECK_FALSE(std::filesystem::exists(first_home.path() + "/journal.db"));
}
