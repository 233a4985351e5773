// The schedules table with a clock of the test's own: which ticks fire when, pause and resume,
// missed ticks at start, and (with the journal) exactly one run per tick across restarts.
#include <catch2/catch.hpp>

#include <ctime>

#include "config/scenario/parse.h"
#include "master/runs.h"
#include "master/schedules.h"
#include "shared/proc.h"
#include "tests/unit/master/journal_bench.h"

using corral::Code;
using corral::Status;
using corral::master::fire_write;
using corral::master::Run;
using corral::master::Runs;
using corral::master::Schedule;
using corral::master::Schedules;
using corral::master::ScheduleTick;
using corral::master::journal::Journal;
using corral::master::journal::ScheduleRow;
using corral::master::journal::Store;
using nlohmann::json;

namespace {

// "2026-03-01 10:05" (UTC) in Unix ms.
int64_t at(const char* text) {
  std::tm tm{};
  REQUIRE(strptime(text, "%Y-%m-%d %H:%M", &tm) != nullptr);
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}
constexpr int64_t kSecond = 1000;

const char* const kScenarioText = R"({"name": "ping", "steps": [
    {"name": "a", "request": {"url": "{{base}}/a"}}]})";

std::shared_ptr<const corral::scenario::Scenario> scenario() {
  auto s = corral::scenario::parse_scenario(json::parse(kScenarioText), {"base"});
  INFO(s.status().message());
  REQUIRE(s.is_ok());
  return *s;
}

Schedule schedule(const std::string& name, const char* cron, bool catch_up = false) {
  auto c = corral::config::Cron::parse(cron);
  REQUIRE(c.is_ok());
  Schedule s;
  s.name = name;
  s.cron = *c;
  s.scenario = scenario();
  s.vars = {{"base", "http://127.0.0.1:1"}};
  s.instances = 3;
  s.catch_up = catch_up;
  return s;
}

// The ticks as "name@time" in UTC.
std::vector<std::string> brief(const std::vector<ScheduleTick>& ticks) {
  std::vector<std::string> out;
  for (const ScheduleTick& t : ticks) out.push_back(t.name + "@" + corral::iso8601_utc(t.tick_ms));
  return out;
}
using Ticks = std::vector<std::string>;

// A row as the journal would hold it for a schedule added at `after_ms`.
ScheduleRow row(const std::string& name, const char* cron, int64_t after_ms, bool catch_up) {
  return {name,
          cron,
          kScenarioText,
          R"({"base":"http://127.0.0.1:1"})",
          3,
          1,
          catch_up,
          false,
          after_ms,
          after_ms,
          0,
          0,
          ""};
}

}  // namespace

TEST_CASE("schedules: a tick fires once, at its time and not before") {
  Schedules table;
  REQUIRE_OK(table.add(schedule("five", "*/5 * * * *"), at("2026-03-01 10:00") + 30 * kSecond));
  CHECK(table.next_due() == at("2026-03-01 10:05"));
  CHECK(table.due(at("2026-03-01 10:05") - 1).empty());
  CHECK(brief(table.due(at("2026-03-01 10:05"))) == Ticks{"five@2026-03-01T10:05:00Z"});
  CHECK(table.due(at("2026-03-01 10:05") + 500).empty());  // the same tick, again: nothing
  CHECK(table.next_due() == at("2026-03-01 10:10"));
  CHECK(brief(table.due(at("2026-03-01 10:10") + 20)) == Ticks{"five@2026-03-01T10:10:00Z"});
}

TEST_CASE("schedules: a schedule added on a tick fires first at the next one") {
  Schedules table;
  REQUIRE_OK(table.add(schedule("m", "* * * * *"), at("2026-03-01 10:00")));
  CHECK(table.due(at("2026-03-01 10:00")).empty());
  CHECK(table.next_due() == at("2026-03-01 10:01"));
}

TEST_CASE("schedules: the timer is armed for the earliest next tick of those not paused") {
  Schedules table;
  const int64_t t0 = at("2026-03-01 10:00") + kSecond;
  REQUIRE_OK(table.add(schedule("hourly", "0 * * * *"), t0));
  REQUIRE_OK(table.add(schedule("quarter", "*/15 * * * *"), t0));
  CHECK(table.next_due() == at("2026-03-01 10:15"));
  REQUIRE(table.pause("quarter").is_ok());
  CHECK(table.next_due() == at("2026-03-01 11:00"));
  REQUIRE(table.pause("hourly").is_ok());
  CHECK(table.next_due() == std::nullopt);
  REQUIRE_OK(table.remove("hourly"));
  REQUIRE(table.resume("quarter", t0).is_ok());
  CHECK(table.next_due() == at("2026-03-01 10:15"));
  REQUIRE_OK(table.remove("quarter"));
  CHECK(table.next_due() == std::nullopt);
}

TEST_CASE("schedules: a paused schedule fires nothing, and resumes from the time of the resume") {
  Schedules table;
  REQUIRE_OK(table.add(schedule("five", "*/5 * * * *"), at("2026-03-01 10:00")));
  auto paused = table.pause("five");
  REQUIRE(paused.is_ok());
  CHECK((*paused)->paused);
  CHECK((*paused)->next_ms == 0);
  CHECK(table.due(at("2026-03-01 10:17")).empty());
  auto resumed = table.resume("five", at("2026-03-01 10:17") + 30 * kSecond);
  REQUIRE(resumed.is_ok());
  CHECK_FALSE((*resumed)->paused);
  // 10:05, 10:10 and 10:15 passed during the pause: they do not come back.
  CHECK(table.due(at("2026-03-01 10:19")).empty());
  CHECK(table.next_due() == at("2026-03-01 10:20"));
  CHECK(brief(table.due(at("2026-03-01 10:20"))) == Ticks{"five@2026-03-01T10:20:00Z"});
}

TEST_CASE("schedules: pausing twice or resuming one that runs changes nothing") {
  Schedules table;
  REQUIRE_OK(table.add(schedule("five", "*/5 * * * *"), at("2026-03-01 10:00")));
  // Resuming a running schedule must not move its start: the 10:05 tick still fires.
  REQUIRE(table.resume("five", at("2026-03-01 10:07")).is_ok());
  CHECK(brief(table.due(at("2026-03-01 10:07"))) == Ticks{"five@2026-03-01T10:05:00Z"});
  REQUIRE(table.pause("five").is_ok());
  REQUIRE(table.pause("five").is_ok());
  CHECK(table.find("five")->paused);
  CHECK(table.next_due() == std::nullopt);
}

TEST_CASE("schedules: a timer that comes late fires only the last passed tick, once") {
  Schedules table;
  REQUIRE_OK(table.add(schedule("five", "*/5 * * * *"), at("2026-03-01 10:00")));
  // The clock was set forward, or the host slept: 10:05 to 10:25 passed at once.
  CHECK(brief(table.due(at("2026-03-01 10:27"))) == Ticks{"five@2026-03-01T10:25:00Z"});
  CHECK(table.due(at("2026-03-01 10:29")).empty());
  CHECK(table.next_due() == at("2026-03-01 10:30"));
}

TEST_CASE("schedules: each schedule due fires, one tick each") {
  Schedules table;
  REQUIRE_OK(table.add(schedule("a", "*/5 * * * *"), at("2026-03-01 10:00")));
  REQUIRE_OK(table.add(schedule("b", "5 10 * * *"), at("2026-03-01 10:00")));
  REQUIRE_OK(table.add(schedule("c", "0 11 * * *"), at("2026-03-01 10:00")));
  CHECK(brief(table.due(at("2026-03-01 10:05"))) ==
        Ticks{"a@2026-03-01T10:05:00Z", "b@2026-03-01T10:05:00Z"});
}

TEST_CASE("schedules: a name is taken once, and an unknown name is not found") {
  Schedules table;
  REQUIRE_OK(table.add(schedule("x", "* * * * *"), at("2026-03-01 10:00")));
  Status dup = table.add(schedule("x", "0 * * * *"), at("2026-03-01 10:00"));
  CHECK(dup.code() == Code::kAlreadyExists);
  CHECK(dup.message() == "a schedule named \"x\" exists");
  CHECK(table.find("x")->cron.text() == "* * * * *");  // the first one stays
  CHECK(table.remove("y").code() == Code::kNotFound);
  CHECK(table.remove("y").message() == "no schedule \"y\"");
  CHECK(table.pause("y").status().code() == Code::kNotFound);
  CHECK(table.resume("y", 0).status().code() == Code::kNotFound);
  REQUIRE_OK(table.remove("x"));
  CHECK(table.find("x") == nullptr);
  CHECK(table.add(schedule("x", "0 * * * *"), at("2026-03-01 10:00")).message() == "");
}

TEST_CASE("schedules: names hold letters, digits, dots, underscores and dashes") {
  for (const char* good : {"nightly", "a", "Job-7.b_c", "0"}) {
    CAPTURE(good);
    CHECK(corral::master::check_schedule_name(good));
  }
  CHECK(corral::master::check_schedule_name(std::string(64, 'a')));
  struct Case {
    std::string name;
    const char* error;
  };
  const Case bad[] = {
      {"", "name: expected 1 to 64 characters, got 0"},
      {std::string(65, 'a'), "name: expected 1 to 64 characters, got 65"},
      {"a/b", "name: \"a/b\" may hold only letters, digits, '.', '_' and '-'"},
      {"a b", "name: \"a b\" may hold only letters, digits, '.', '_' and '-'"},
      {"..", "name: \"..\" starts with '.'"},
  };
  for (const Case& c : bad) {
    CAPTURE(c.name);
    CHECK(corral::master::check_schedule_name(c.name).message() == c.error);
  }
}

TEST_CASE("schedules: with catch_up, ticks missed while down fire once at start") {
  Schedules table;
  // Added at 10:00; the daemon was down from before 10:05 until 12:03 (24 ticks).
  auto fire = table.restore({row("five", "*/5 * * * *", at("2026-03-01 10:00"), true)},
                            at("2026-03-01 12:03"));
  CHECK(brief(fire) == Ticks{"five@2026-03-01T12:00:00Z"});
  CHECK(table.due(at("2026-03-01 12:03")).empty());
  CHECK(table.next_due() == at("2026-03-01 12:05"));
}

TEST_CASE("schedules: without catch_up, ticks missed while down are skipped at start") {
  Schedules table;
  auto fire = table.restore({row("five", "*/5 * * * *", at("2026-03-01 10:00"), false)},
                            at("2026-03-01 12:03"));
  CHECK(fire.empty());
  CHECK(table.find("five")->after_ms == at("2026-03-01 12:00"));
  CHECK(table.due(at("2026-03-01 12:04")).empty());
  CHECK(table.next_due() == at("2026-03-01 12:05"));
}

TEST_CASE("schedules: at start, nothing missed fires nothing, and a paused schedule stays so") {
  Schedules table;
  ScheduleRow paused = row("paused", "* * * * *", at("2026-03-01 10:00"), true);
  paused.paused = true;
  auto fire = table.restore({row("five", "*/5 * * * *", at("2026-03-01 10:00"), true), paused},
                            at("2026-03-01 10:04"));
  CHECK(fire.empty());
  CHECK(table.find("paused")->paused);
  CHECK(table.next_due() == at("2026-03-01 10:05"));
}

TEST_CASE("schedules: at start, a schedule whose record no longer parses is left out") {
  Schedules table;
  ScheduleRow bad_cron = row("bad-cron", "61 * * * *", 0, true);
  ScheduleRow bad_scenario = row("bad-scenario", "* * * * *", 0, true);
  bad_scenario.scenario = R"({"name": "x"})";
  ScheduleRow bad_vars = row("bad-vars", "* * * * *", 0, true);
  bad_vars.vars = "[]";
  auto fire = table.restore(
      {bad_cron, bad_scenario, bad_vars, row("good", "* * * * *", at("2026-03-01 10:00"), false)},
      at("2026-03-01 10:00"));
  CHECK(fire.empty());
  REQUIRE(table.all().size() == 1);
  CHECK(table.all().begin()->first == "good");
}

TEST_CASE("schedules: the API's view shows times in UTC, and null for what has not happened") {
  Schedules table;
  REQUIRE_OK(table.add(schedule("five", "*/5 * * * *"), at("2026-03-01 10:00") + 10 * kSecond));
  json j = table.to_json(*table.find("five"));
  CHECK(j == json{{"name", "five"},
                  {"cron", "*/5 * * * *"},
                  {"scenario", "ping"},
                  {"instances", 3},
                  {"priority", 1},
                  {"vars", {{"base", "http://127.0.0.1:1"}}},
                  {"catch_up", false},
                  {"paused", false},
                  {"created_at", "2026-03-01T10:00:10Z"},
                  {"next_at", "2026-03-01T10:05:00Z"},
                  {"last_tick_at", nullptr},
                  {"last_fired_at", nullptr},
                  {"last_run", nullptr}});
  auto tick = table.due(at("2026-03-01 10:05"));
  REQUIRE(tick.size() == 1);
  table.fired(tick[0], "r7-abcd", at("2026-03-01 10:05") + 3);
  j = table.to_json(*table.find("five"));
  CHECK(j["last_tick_at"] == "2026-03-01T10:05:00Z");
  CHECK(j["last_fired_at"] == "2026-03-01T10:05:00Z");
  CHECK(j["last_run"] == "r7-abcd");
  CHECK(j["next_at"] == "2026-03-01T10:10:00Z");
  REQUIRE(table.pause("five").is_ok());
  CHECK(table.to_json(*table.find("five"))["next_at"] == nullptr);
}

namespace {

// A master's home, as far as schedules go: the journal file, the runs and schedules tables on
// it, and restart(), which starts over from the file as a restarted daemon does.
struct Master : corral::test::File {
  Master() {
    uv_loop_init(&loop);
    open();
  }
  ~Master() {
    close();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  void open() {
    journal = std::make_unique<Journal>(&loop, corral::test::open_store(path));
    journal->set_on_rejected(
        [this](const corral::master::journal::WriteTag& tag, const std::string& error) {
          rejected.push_back(tag.run + ": " + error);
          runs->on_journal_rejected(tag, error);
        });
    runs = std::make_unique<Runs>(corral::master::RunsOptions{}, journal.get());
    schedules = std::make_unique<Schedules>(journal.get());
  }
  void close() {
    schedules.reset();
    runs.reset();
    journal.reset();
    uv_run(&loop, UV_RUN_NOWAIT);
  }
  // The daemon's start: the rows are read before the runs' restore writes anything.
  std::vector<ScheduleTick> restart(int64_t now_ms) {
    journal->flush();
    close();
    open();
    auto rows = journal->load_now([](Store& s) { return s.schedules(); });
    REQUIRE_OK(rows.status());
    REQUIRE_OK(runs->restore(now_ms).status());
    return schedules->restore(*rows, now_ms);
  }
  // What the daemon does with a tick (RunService::submit): the run, with the tick recorded in the
  // same journal write, then the table told.
  std::string fire(const ScheduleTick& tick, int64_t now_ms) {
    const Schedule* s = schedules->find(tick.name);
    REQUIRE(s != nullptr);
    Run& run = runs->create(s->scenario, s->vars, s->instances, now_ms, s->priority,
                            fire_write(tick, now_ms));
    schedules->fired(tick, run.id, now_ms);
    return run.id;
  }
  // Runs the loop until the journal has tried everything queued (rejections are delivered).
  void settle() {
    journal->flush();
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    uv_timer_start(
        &t, [](uv_timer_t*) {}, 20, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_close(reinterpret_cast<uv_handle_t*>(&t), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);
  }
  std::string count(const char* table) {
    journal->flush();
    return corral::test::sql(path, std::string("SELECT COUNT(*) FROM ") + table);
  }

  uv_loop_t loop;
  std::unique_ptr<Journal> journal;
  std::unique_ptr<Runs> runs;
  std::unique_ptr<Schedules> schedules;
  std::vector<std::string> rejected;
};

}  // namespace

TEST_CASE("schedules: a tick journaled with its run never fires again after a restart") {
  Master m;
  REQUIRE_OK(m.schedules->add(schedule("five", "*/5 * * * *", true), at("2026-03-01 10:00")));
  auto ticks = m.schedules->due(at("2026-03-01 10:05"));
  REQUIRE(ticks.size() == 1);
  const std::string id = m.fire(ticks[0], at("2026-03-01 10:05") + 40);
  // Back at 10:07 (catch_up on): 10:05 fired, 10:10 has not come: nothing fires.
  CHECK(m.restart(at("2026-03-01 10:07")).empty());
  const Schedule* s = m.schedules->find("five");
  REQUIRE(s != nullptr);
  CHECK(s->last_run == id);
  CHECK(s->last_tick_ms == at("2026-03-01 10:05"));
  CHECK(s->last_fired_ms == at("2026-03-01 10:05") + 40);
  CHECK(m.schedules->next_due() == at("2026-03-01 10:10"));
  CHECK(m.runs->find(id) != nullptr);
  // Down again until 10:12: only 10:10 catches up, never 10:05.
  CHECK(brief(m.restart(at("2026-03-01 10:12"))) == Ticks{"five@2026-03-01T10:10:00Z"});
  CHECK(m.count("schedule_fires") == "1");
  CHECK(m.count("runs") == "1");
}

TEST_CASE("schedules: a tick whose run was never journaled is a missed tick: once, or skipped") {
  Master m;
  REQUIRE_OK(m.schedules->add(schedule("up", "*/5 * * * *", true), at("2026-03-01 10:00")));
  REQUIRE_OK(m.schedules->add(schedule("skip", "*/5 * * * *", false), at("2026-03-01 10:00")));
  // Both ticks are due, and the daemon dies before their runs are written.
  REQUIRE(m.schedules->due(at("2026-03-01 10:05")).size() == 2);
  auto fire = m.restart(at("2026-03-01 10:06"));
  CHECK(brief(fire) == Ticks{"up@2026-03-01T10:05:00Z"});
  m.fire(fire[0], at("2026-03-01 10:06"));
  // The skip is journaled: a second restart finds nothing missed.
  CHECK(m.restart(at("2026-03-01 10:07")).empty());
  CHECK(m.schedules->find("skip")->after_ms == at("2026-03-01 10:05"));
  CHECK(m.schedules->find("up")->last_tick_ms == at("2026-03-01 10:05"));
  CHECK(m.count("runs") == "1");
}

TEST_CASE("schedules: the journal refuses a second run for one tick, and that run with it") {
  Master m;
  REQUIRE_OK(m.schedules->add(schedule("five", "*/5 * * * *"), at("2026-03-01 10:00")));
  const ScheduleTick tick{"five", at("2026-03-01 10:05")};
  const std::string first = m.fire(tick, at("2026-03-01 10:05"));
  // As another host sharing the database would: the same tick, another run.
  const std::string second = m.fire(tick, at("2026-03-01 10:05") + 7);
  m.settle();
  REQUIRE(m.rejected.size() == 1);
  CHECK(m.rejected[0] == second +
                             ": put_fire: schedule five already fired its tick at "
                             "2026-03-01T10:05:00Z as run " +
                             first);
  CHECK(m.count("runs") == "1");
  CHECK(m.count("schedule_fires") == "1");
  // The refused run goes no further: its instances ended errored.
  const Run* run = m.runs->find(second);
  REQUIRE(run != nullptr);
  CHECK(run->count(corral::master::InstanceState::kErrored) == 3);
}

TEST_CASE("schedules: add, pause, resume and remove survive a restart") {
  Master m;
  REQUIRE_OK(m.schedules->add(schedule("a", "0 * * * *"), at("2026-03-01 10:00")));
  REQUIRE_OK(m.schedules->add(schedule("b", "30 * * * *"), at("2026-03-01 10:00")));
  REQUIRE_OK(m.schedules->add(schedule("c", "0 0 * * *"), at("2026-03-01 10:00")));
  REQUIRE(m.schedules->pause("a").is_ok());
  REQUIRE(m.schedules->pause("b").is_ok());
  REQUIRE(m.schedules->resume("b", at("2026-03-01 10:40")).is_ok());
  REQUIRE_OK(m.schedules->remove("c"));
  CHECK(m.restart(at("2026-03-01 10:45")).empty());
  REQUIRE(m.schedules->all().size() == 2);
  CHECK(m.schedules->find("a")->paused);
  CHECK_FALSE(m.schedules->find("b")->paused);
  CHECK(m.schedules->find("b")->after_ms == at("2026-03-01 10:40"));
  CHECK(m.schedules->find("b")->instances == 3);
  CHECK(m.schedules->find("b")->vars == json{{"base", "http://127.0.0.1:1"}});
  CHECK(m.schedules->find("b")->scenario->name == "ping");
  CHECK(m.schedules->find("c") == nullptr);
  CHECK(m.schedules->next_due() == at("2026-03-01 11:30"));
}

TEST_CASE("schedules: a tick refused for a full queue is skipped for good, also after a restart") {
  Master m;
  REQUIRE_OK(m.schedules->add(schedule("five", "*/5 * * * *", true), at("2026-03-01 10:00")));
  auto ticks = m.schedules->due(at("2026-03-01 10:05"));
  REQUIRE(ticks.size() == 1);
  m.schedules->skipped(ticks[0], "queue full: 2000000 instances are waiting for a worker");
  CHECK(m.schedules->find("five")->last_run.empty());
  // catch_up is on, but the tick was not missed: it was refused, and that is final.
  CHECK(m.restart(at("2026-03-01 10:06")).empty());
  CHECK(m.schedules->find("five")->after_ms == at("2026-03-01 10:05"));
  CHECK(m.count("runs") == "0");
}
