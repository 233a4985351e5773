// Schedules seen from outside: `corral schedule` against the real daemon, the API's answers to
// bad input, restarts that keep everything, and one real tick (the next whole minute: under a
// minute of waiting) that a running daemon fires and a daemon down across it catches up or
// skips. Which ticks fire when is unit-tested with a clock of the tests' own
// (tests/unit/master/schedules_test.cc).
#include <catch2/catch.hpp>

#include <signal.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"

using namespace corral::test;

namespace {

std::string write_file(const TempHome& home, const std::string& name, const Json& doc) {
  std::ofstream(home.file(name)) << doc.dump();
  return home.file(name);
}

Json ping_scenario() {
  return Json::parse(R"({"name": "ping", "steps": [
      {"name": "start", "request": {"method": "POST", "url": "{{base}}/jobs", "json": {}},
       "expect": [{"status": 201}]}]})");
}

// GET /schedules as a map by name.
std::map<std::string, Json> schedules_of(Daemon& d) {
  const Json list = d.api("GET", "/schedules").json.at("schedules");
  std::map<std::string, Json> out;
  for (const Json& s : list) out[s.at("name").get<std::string>()] = s;
  return out;
}

// "2026-12-03T14:05:00Z" in Unix ms.
int64_t unix_ms(const std::string& iso) {
  std::tm tm{};
  REQUIRE(strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr);
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

// The cells of the table row whose first cell is `first`; empty when there is none.
std::vector<std::string> cells_of(const std::string& table, const std::string& first) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::istringstream parts(line);
    for (std::string cell; std::getline(parts, cell, '|');) {
      const size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (cells.size() > 1 && cells[1] == first) return {cells.begin() + 1, cells.end()};
  }
  return {};
}

int64_t now_ms() { return static_cast<int64_t>(std::time(nullptr)) * 1000; }

void restart(std::unique_ptr<Daemon>& d, const TempHome& home, int signum) {
  d->signal(signum);
  d->wait_exit(seconds(20));
  d.reset();
  d = std::make_unique<Daemon>(home, DaemonOptions().with_workers(1));
}

}  // namespace

TEST_CASE("schedule cli: add, ls, pause, resume and rm, kept across a restart") {
  TempHome home;
  auto d = std::make_unique<Daemon>(home, DaemonOptions().with_workers(1));
  const std::string file = write_file(home, "ping.json", ping_scenario());
  const std::string h = home.path();

  CliResult none = run_cli({"schedule", "ls"}, h);
  CHECK(none.exit_code == 0);
  CHECK(none.out == "no schedules (add one with corral schedule add NAME --cron EXPR FILE)\n");

  CliResult add = run_cli({"schedule", "add", "nightly", "--cron", "0 3 * * *", file, "-n", "2",
                           "--var", "base=http://127.0.0.1:1", "--priority", "5"},
                          h);
  INFO(add.describe());
  REQUIRE(add.exit_code == 0);
  CHECK_THAT(add.out, Catch::StartsWith("corral: schedule nightly: \"0 3 * * *\" (UTC), 2 "
                                        "instances of ping; next at ") &&
                          Catch::Contains("T03:00:00Z"));
  add = run_cli({"schedule", "add", "five", "--cron", "*/5 * * * MON-fri", file, "--catch-up",
                 "--var", "base=http://127.0.0.1:1"},
                h);
  REQUIRE(add.exit_code == 0);
  CHECK_THAT(add.out, Catch::EndsWith("; catch-up on\n"));

  CliResult ls = run_cli({"schedule", "ls"}, h);
  INFO(ls.describe());
  REQUIRE(ls.exit_code == 0);
  using Cells = std::vector<std::string>;
  CHECK(cells_of(ls.out, "name") == Cells{"name", "cron (UTC)", "scenario", "instances", "state",
                                          "next", "last tick", "last run"});
  const Cells five = cells_of(ls.out, "five");
  REQUIRE(five.size() == 8);
  CHECK(Cells(five.begin(), five.begin() + 5) ==
        Cells{"five", "*/5 * * * MON-fri", "ping", "1", "active"});
  CHECK(five[7] == "-");
  const Cells nightly = cells_of(ls.out, "nightly");
  REQUIRE(nightly.size() == 8);
  CHECK(nightly[1] == "0 3 * * *");
  CHECK(nightly[3] == "2");
  CHECK_THAT(nightly[5], Catch::EndsWith(" 03:00"));
  CHECK(nightly[6] == "-");

  CliResult paused = run_cli({"schedule", "pause", "five"}, h);
  CHECK(paused.exit_code == 0);
  CHECK(paused.out == "corral: schedule five paused\n");
  CliResult json_ls = run_cli({"schedule", "ls", "--json"}, h);
  REQUIRE(json_ls.exit_code == 0);
  const Json listed = Json::parse(json_ls.out).at("schedules");
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].at("name") == "five");  // by name
  CHECK(listed[0].at("paused") == true);
  CHECK(listed[0].at("next_at").is_null());
  CHECK(listed[0].at("catch_up") == true);
  CHECK(listed[0].at("cron") == "*/5 * * * MON-fri");
  CHECK(listed[1].at("instances") == 2);
  CHECK(listed[1].at("priority") == 5);
  CHECK(listed[1].at("vars") == Json{{"base", "http://127.0.0.1:1"}});
  CHECK(listed[1].at("last_run").is_null());
  CHECK(run_cli({"schedule", "ls"}, h).out.find("| paused |") != std::string::npos);

  CliResult resumed = run_cli({"schedule", "resume", "five"}, h);
  CHECK(resumed.exit_code == 0);
  CHECK_THAT(resumed.out, Catch::StartsWith("corral: schedule five resumed; next at 20"));
  REQUIRE(run_cli({"schedule", "pause", "nightly"}, h).exit_code == 0);

  // Stopped and started again: both schedules, as they were.
  const auto before = schedules_of(*d);
  restart(d, home, SIGTERM);
  auto after = schedules_of(*d);
  REQUIRE(after.size() == 2);
  CHECK(after.at("nightly") == before.at("nightly"));
  CHECK(after.at("five") == before.at("five"));
  CHECK(after.at("nightly").at("paused") == true);

  CliResult rm = run_cli({"schedule", "rm", "five"}, h);
  CHECK(rm.exit_code == 0);
  CHECK(rm.out == "corral: schedule five removed\n");
  restart(d, home, SIGKILL);  // a removal answered is in the journal, even after a kill -9
  after = schedules_of(*d);
  CHECK(after.size() == 1);
  CHECK(after.count("nightly") == 1);
  CHECK(d->api("GET", "/runs").json.at("runs").empty());  // nothing fired meanwhile
}

TEST_CASE(
    "schedule cli: a refused schedule exits 2 naming what is wrong, an unknown name exits 1") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  const std::string file = write_file(home, "ping.json", ping_scenario());
  const std::string h = home.path();
  const std::vector<std::string> var = {"--var", "base=http://127.0.0.1:1"};
  auto add = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"schedule", "add"};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), var.begin(), var.end());
    return run_cli(all, h);
  };
  REQUIRE(add({"x", "--cron", "* * * * *", file}).exit_code == 0);
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const Case cases[] = {
      {{"x", "--cron", "0 3 * * *", file}, "corral: a schedule named \"x\" exists\n"},
      {{"y", "--cron", "0 24 * * *", file},
       "corral: cron: field 2 (hour): 24 is out of range 0-23\n"},
      {{"y", "--cron", "0 3 * *", file},
       "corral: cron: expected 5 fields (minute hour day-of-month month day-of-week), got 4\n"},
      {{"y/z", "--cron", "0 3 * * *", file},
       "corral: name: \"y/z\" may hold only letters, digits, '.', '_' and '-'\n"},
      {{"y", "--cron", "0 3 * * *", write_file(home, "bad.json", {{"name", "bad"}})},
       "corral: scenario.steps: missing, expected a non-empty array\n"},
      {{"y", "--cron", "0 3 * * *", home.file("missing.json")},
       "corral: cannot read " + home.file("missing.json") + "\n"},
  };
  for (const Case& c : cases) {
    CliResult r = add(c.args);
    INFO(r.describe());
    CHECK(r.exit_code == 2);
    CHECK(r.err == c.error);
  }
  for (const char* verb : {"rm", "pause", "resume"}) {
    CliResult r = run_cli({"schedule", verb, "nope"}, h);
    INFO(r.describe());
    CHECK(r.exit_code == 1);
    CHECK(r.err == "corral: no schedule \"nope\"\n");
  }
  // The API says the same, with its status codes.
  const Json body = {{"name", "x"},
                     {"cron", "* * * * *"},
                     {"scenario", ping_scenario()},
                     {"vars", {{"base", "http://127.0.0.1:1"}}}};
  CHECK(d.api("POST", "/schedules", body.dump()).status == 409);
  Json bad = body;
  bad["name"] = "w";
  bad["cron"] = "*/0 * * * *";
  ApiResponse r = d.api("POST", "/schedules", bad.dump());
  CHECK(r.status == 400);
  CHECK(r.json.at("error") ==
        "cron: field 1 (minute): the step of */0 is not a number from 1 to 59");
  bad["cron"] = "* * * * *";
  bad["catch_up"] = "yes";
  CHECK(d.api("POST", "/schedules", bad.dump()).json.at("error") ==
        "catch_up: expected true or false, got \"yes\"");
  bad.erase("catch_up");
  bad["instances"] = 0;
  CHECK(d.api("POST", "/schedules", bad.dump()).json.at("error") ==
        "instances: expected an integer from 1 to 1000000, got 0");
  CHECK(d.api("DELETE", "/schedules/nope").status == 404);
  CHECK(d.api("POST", "/schedules/nope/pause").status == 404);
  CHECK(d.api("GET", "/schedules/x").status == 405);
  CHECK(schedules_of(d).size() == 1);
}

// One real tick serves two daemons: one that runs through it, one that is down across it.
TEST_CASE(
    "schedule: a real tick fires a run as POST /runs would, a daemon down across it catches "
    "it up once or skips it, and a kill -9 repeats nothing") {
  JobApi target;
  // The daemon that is down across the tick must be stopped before it: not at a minute's end.
  wait_for([] { return 60000 - now_ms() % 60000 >= 8000; }, seconds(10),
           "a minute with 8 s left in it");
  auto schedule = [&](const std::string& name, bool catch_up) {
    return Json{{"name", name},         {"cron", "* * * * *"},
                {"catch_up", catch_up}, {"scenario", ping_scenario()},
                {"instances", 2},       {"vars", {{"base", target.base()}}}}
        .dump();
  };
  TempHome home, down_home;
  auto d = std::make_unique<Daemon>(home, DaemonOptions().with_workers(1));
  ApiResponse added = d->api("POST", "/schedules", schedule("every-minute", true));
  INFO(added.body);
  REQUIRE(added.status == 201);
  const int64_t next = unix_ms(added.json.at("schedule").at("next_at"));
  CHECK(next % 60000 == 0);
  CHECK(next > now_ms() - 1000);
  CHECK(next <= now_ms() + 61000);
  auto down = std::make_unique<Daemon>(down_home, DaemonOptions().with_workers(1));
  REQUIRE(down->api("POST", "/schedules", schedule("catch-up", true)).status == 201);
  REQUIRE(down->api("POST", "/schedules", schedule("skip", false)).status == 201);
  down->signal(SIGTERM);
  REQUIRE(down->wait_exit(seconds(20)) == 0);
  REQUIRE(now_ms() < next);

  // The next whole minute: at most 60 s away.
  Json s;
  d->wait_until(
      [&] {
        s = schedules_of(*d).at("every-minute");
        return !s.at("last_run").is_null();
      },
      seconds(75),
      "the schedule to fire at " + added.json["schedule"]["next_at"].get<std::string>());
  CHECK(unix_ms(s.at("last_tick_at")) == next);
  CHECK(unix_ms(s.at("last_fired_at")) >= next);
  CHECK(unix_ms(s.at("last_fired_at")) <= next + 5000);
  CHECK(unix_ms(s.at("next_at")) == next + 60000);
  const std::string id = s.at("last_run");
  // An ordinary run, of the schedule's scenario, instances and vars; it runs and passes.
  Json run;
  d->wait_until(
      [&] {
        run = d->api("GET", "/runs/" + id).json;
        return run.value("state", "") == "finished";
      },
      seconds(20), "run " + id + " to finish");
  CHECK(run.at("scenario") == "ping");
  CHECK(run.at("instances") == 2);
  CHECK(run.at("counts").at("passed") == 2);
  CHECK(run.at("vars") == Json{{"base", target.base()}});

  // The daemon that was down: at its start, catch-up fires the tick once, skip skips it.
  down = std::make_unique<Daemon>(down_home, DaemonOptions().with_workers(1));
  auto caught = schedules_of(*down);
  CHECK(unix_ms(caught.at("catch-up").at("last_tick_at")) == next);
  CHECK(caught.at("skip").at("last_run").is_null());
  CHECK(unix_ms(caught.at("skip").at("next_at")) == next + 60000);
  const std::string caught_id = caught.at("catch-up").at("last_run");
  down->wait_until(
      [&] { return down->api("GET", "/runs/" + caught_id).json.value("state", "") == "finished"; },
      seconds(20), "run " + caught_id + " to finish");
  CHECK(down->api("GET", "/runs/" + caught_id).json.at("counts").at("passed") == 2);
  CHECK(down->api("GET", "/runs").json.at("runs").size() == 1);
  const std::string tick = caught.at("catch-up").at("last_tick_at");
  CHECK_THAT(read_file(down_home.master_log()),
             Catch::Contains("schedule catch-up: the tick at " + tick +
                             " passed while the daemon was down; catch_up fires it now") &&
                 Catch::Contains("schedule skip: the tick at " + tick +
                                 " passed while the daemon was down; skipped (catch_up is off)"));
  CHECK(target.stats().at("jobs") == 4);

  // kill -9, then a new daemon: the fire is remembered, and with catch_up on the tick that fired
  // does not fire again.
  d->wait_until([&] { return d->health()["journal"]["queued_writes"] == 0; }, seconds(10),
                "the journal to catch up");
  restart(d, home, SIGKILL);
  const Json again = schedules_of(*d).at("every-minute");
  CHECK(again.at("last_run") == id);
  CHECK(again.at("last_tick_at") == s.at("last_tick_at"));
  CHECK(again.at("last_fired_at") == s.at("last_fired_at"));
  CHECK(d->api("GET", "/runs/" + id).json.at("counts").at("passed") == 2);
  if (now_ms() + 2000 < next + 60000) {
    hold_for([&] { return d->api("GET", "/runs").json.at("runs").size() == 1; }, milliseconds(1000),
             "one run: the fired tick fires no second run");
  } else {
    WARN("the next minute came during the restart: the no-repeat check was skipped");
  }
}
