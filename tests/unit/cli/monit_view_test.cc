// What `corral monit` draws, from fixed API answers, a fixed history and a fixed clock.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "cli/format.h"
#include "cli/monit_view.h"
#include "cli/table.h"

namespace corral::cli {
namespace {

using nlohmann::json;
using Tone = MonitLine::Tone;

const auto kNow = *parse_utc_timestamp("2026-11-30T15:02:00Z");

// Two ready workers, a run in progress with failures and a finished one, and three log lines,
// as one refresh gathers them; three refreshes of history.
struct Fixture {
  MonitSnapshot snapshot;
  WorkerHistory history;

  Fixture() {
    snapshot.health = *api::health_from_json(
        json::parse(R"({"pid":123,"workers_wanted":2,"listen":"127.0.0.1:7070","home":"/h"})"));
    snapshot.workers = api::workers_from_json(json::parse(R"json({"workers":[
      {"slot":1,"pid":457,"state":"ready","restarts":0,"uptime_s":65,"rss_bytes":20971520,
       "loop_lag_ms":12,"active":40},
      {"slot":0,"pid":456,"state":"ready","restarts":1,"uptime_s":185,"rss_bytes":12897484,
       "loop_lag_ms":0.3,"active":60}]})json"))
                           ->workers;
    snapshot.runs = api::runs_from_json(json::parse(R"json({"runs": [
      {"id":"r2-00b1","scenario":"job-b","state":"running","instances":100,
       "created_at":"2026-11-30T15:01:48Z","finished_at":null,
       "counts":{"queued":0,"running":58,"passed":38,"failed":2,"errored":2,"cancelled":0}},
      {"id":"r1-00a0","scenario":"job-a","state":"finished","instances":10,
       "created_at":"2026-11-30T14:00:00Z","finished_at":"2026-11-30T14:02:05Z",
       "counts":{"queued":0,"running":0,"passed":10,"failed":0,"errored":0,"cancelled":0}}]})json"))
                        ->runs;
    snapshot.failures["r2-00b1"] = api::run_detail_from_json(json::parse(R"json({"failures": [
      {"step":1,"step_name":"wait for A","reason":"until not met after 3 attempts","count":2},
      {"step":0,"step_name":"start A","reason":"connect: connection refused","count":2}]})json"))
                                       ->failures;
    snapshot.log_lines = {"2026-11-30T15:01:58.001+0000 master[123] info one",
                          "2026-11-30T15:01:59.002+0000 worker-0[456] info two",
                          "2026-11-30T15:01:59.500+0000 master[123] info three"};
    snapshot.logs_dir = "/h/logs";
    snapshot.now = kNow;
    snapshot.answered_at = kNow;
    for (double cpu : {5.0, 50.0, 100.0}) {
      history.add(0, {cpu, 12897484, 0.3, 60});
      history.add(1, {std::nullopt, 20971520, 12, 40});
    }
  }

  std::vector<MonitLine> render(size_t width = 160, size_t height = 50, bool utf8 = true) const {
    return render_monit(snapshot, history, {width, height, utf8});
  }
};

// The text of the first line that contains `what`, or "".
std::string line_with(const std::vector<MonitLine>& lines, const std::string& what) {
  for (const MonitLine& l : lines) {
    if (l.text.find(what) != std::string::npos) return l.text;
  }
  return "";
}

std::string all_text(const std::vector<MonitLine>& lines) {
  std::string out;
  for (const MonitLine& l : lines) out += l.text + "\n";
  return out;
}

TEST_CASE("monit view: the title sums up the daemon and how to quit") {
  const auto lines = Fixture().render();
  REQUIRE(lines.size() >= 2);
  CHECK(lines[0].text ==
        "corral monit · 2/2 workers ready · daemon pid 123 · api 127.0.0.1:7070 "
        "· home /h");
  CHECK(lines[0].tone == Tone::kTitle);
  CHECK(lines[1].text == "refreshing every 1s · q or Ctrl-C quits");
}

// The cells of a table row ("│ 0 │ 456 │ ..."), trimmed; [0] is what precedes the first "│".
std::vector<std::string> cells_of(const std::string& row) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t bar; (bar = row.find("│", from)) != std::string::npos; from = bar + 3) {
    out.push_back(row.substr(from, bar - from));
  }
  out.push_back(row.substr(from));
  for (std::string& c : out) {
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
  }
  return out;
}

TEST_CASE("monit view: a row per worker in slot order with its values and history") {
  const auto lines = Fixture().render();
  const std::string text = all_text(lines);
  REQUIRE(text.find("│ 456 ") != std::string::npos);
  CHECK(text.find("│ 456 ") < text.find("│ 457 "));
  const auto slot0 = cells_of(line_with(lines, "│ 456 "));
  REQUIRE(slot0.size() == 11);
  CHECK(slot0[1] == "0");
  CHECK(slot0[3] == "ready");
  CHECK(slot0[4] == "3m");
  CHECK(slot0[5] == "1");
  // Each value, then its history right-aligned: CPU from 0 to 100 %, lag from 0 to at least
  // 10 ms, memory and instances from 0 to their largest value.
  CHECK_THAT(slot0[6], Catch::StartsWith("100% ") && Catch::EndsWith(" ▁▅█"));
  CHECK_THAT(slot0[7], Catch::StartsWith("12.3mb ") && Catch::EndsWith(" ███"));
  CHECK_THAT(slot0[8], Catch::StartsWith("0.3ms ") && Catch::EndsWith(" ▁▁▁"));
  CHECK_THAT(slot0[9], Catch::StartsWith("60 ") && Catch::EndsWith(" ███"));
  // CPU unknown (its /proc could not be read): a dash and no bars.
  const auto slot1 = cells_of(line_with(lines, "│ 457 "));
  REQUIRE(slot1.size() == 11);
  CHECK(slot1[6] == "-");
  CHECK_THAT(slot1[8], Catch::StartsWith("12ms ") && Catch::EndsWith(" ███"));
  for (const MonitLine& l : lines) CHECK(display_width(l.text) <= 160);
}

TEST_CASE("monit view: an errored slot shows no values, and its reason under the table") {
  Fixture f;
  REQUIRE(f.snapshot.workers[1].slot == 1);
  f.snapshot.workers[1] = *api::worker_from_json(json::parse(R"json(
      {"slot":1,"pid":0,"state":"errored","restarts":11,"uptime_s":0,"rss_bytes":0,
       "loop_lag_ms":0,"active":0,"reason":"crash loop: 11 exits in 60s",
       "next_start_in_ms":45000})json"));
  f.history.add(1, sample_of(f.snapshot.workers[1], std::nullopt));
  const auto lines = f.render();
  const auto row = cells_of(line_with(lines, "│ errored "));
  REQUIRE(row.size() == 11);
  CHECK(row[2] == "-");  // pid
  CHECK(row[4] == "-");  // uptime
  CHECK(row[5] == "11");
  CHECK(row[6] == "-");  // no CPU ever: no bars either
  // The memory of the process it had, then a gap (trimmed here) since it has none.
  CHECK_THAT(row[7], Catch::StartsWith("- ") && Catch::EndsWith("███"));
  const std::string note = "slot 1 errored: crash loop: 11 exits in 60s; next try in 45s";
  REQUIRE_FALSE(line_with(lines, note).empty());
  for (const MonitLine& l : lines) {
    if (l.text == note) CHECK(l.tone == Tone::kAlert);
  }
}

TEST_CASE("monit view: sparklines shrink with the screen and go when it is narrow") {
  Fixture f;
  const std::string wide = line_with(f.render(200), "│ 456 ");
  const std::string narrow = line_with(f.render(100), "│ 456 ");
  CHECK(display_width(wide) > display_width(narrow));
  CHECK(display_width(narrow) <= 100);
  const std::string tiny = line_with(f.render(90), "│ 456 ");
  CHECK(tiny.find("▁") == std::string::npos);
}

TEST_CASE("monit view: runs with their progress, counts, elapsed time and failure groups") {
  const auto lines = Fixture().render();
  const std::string r2 = line_with(lines, "r2-00b1");
  CHECK_THAT(r2, Catch::Contains("running"));
  CHECK_THAT(r2, Catch::Contains("████████░░░░░░░░░░░░ 42/100 42%"));
  CHECK_THAT(r2, Catch::Contains("12s"));
  const std::string r1 = line_with(lines, "r1-00a0");
  CHECK_THAT(r1, Catch::Contains("██████████ 10/10 100%"));
  CHECK_THAT(r1, Catch::Contains("2m05s"));
  const std::string failure = line_with(lines, "r2-00b1: 2 x step 1");
  CHECK(failure == "r2-00b1: 2 x step 1 (wait for A): until not met after 3 attempts");
  CHECK_FALSE(line_with(lines, "r2-00b1: 2 x step 0 (start A)").empty());
}

TEST_CASE("monit view: the last log lines fill the rest of the screen") {
  Fixture f;
  const auto lines = f.render();
  CHECK(lines.back().text == "2026-11-30T15:01:59.500+0000 master[123] info three");
  CHECK_FALSE(line_with(lines, "Logs · /h/logs").empty());
  // A short screen keeps the newest lines that fit.
  const auto short_screen = f.render(160, lines.size() - 1);
  REQUIRE(short_screen.size() == lines.size() - 1);
  CHECK(short_screen.back().text == lines.back().text);
  CHECK(line_with(short_screen, "info one").empty());
  // Shorter still: the screen's height is the limit.
  CHECK(f.render(160, 10).size() == 10);
  f.snapshot.log_lines.clear();
  CHECK_FALSE(line_with(f.render(), "no log lines yet").empty());
}

TEST_CASE("monit view: a daemon that stops answering shows with the age of the last answer") {
  Fixture f;
  f.snapshot.problem = "daemon not answering on /h/corral.sock";
  f.snapshot.problem_detail = "GET /health: connect: refused";
  f.snapshot.now = kNow + std::chrono::seconds(12);
  const auto lines = f.render();
  CHECK(lines[1].text == "daemon not answering on /h/corral.sock for 12s · retrying every 1s");
  CHECK(lines[1].tone == Tone::kAlert);
  CHECK(lines[2].text == "GET /health: connect: refused");
  CHECK(lines[3].text == "Workers");
  CHECK_FALSE(line_with(lines, "│ 456 ").empty());  // the last answer stays on screen
}

TEST_CASE("monit view: ASCII only outside a UTF-8 locale, but for the title's dots") {
  std::string text = all_text(Fixture().render(160, 50, false));
  CHECK_THAT(text, Catch::Contains("########............ 42/100 42%"));
  CHECK_THAT(text, Catch::Contains("+------+"));
  // The title's "·" comes from render_summary_line, which `corral status` prints the same way.
  for (size_t at; (at = text.find("·")) != std::string::npos;) text.erase(at, 2);
  CHECK(std::all_of(text.begin(), text.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
}

TEST_CASE("monit view: no workers and no runs yet") {
  MonitSnapshot empty;
  empty.now = kNow;
  empty.answered_at = kNow;
  const auto lines = render_monit(empty, WorkerHistory(), {80, 24, true});
  CHECK_FALSE(line_with(lines, "no runs yet").empty());
  CHECK_FALSE(line_with(lines, "slot").empty());  // the workers' header
}

TEST_CASE("monit runs to show: unfinished runs first, then the newest finished, five at most") {
  json runs = json::array();
  const char* states[] = {"finished", "running", "finished", "cancelled", "finished",
                          "finished", "queued",  "finished", "finished"};
  for (int i = 0; i < 9; ++i) {
    runs.push_back({{"id", "r" + std::to_string(9 - i)}, {"state", states[i]}});
  }
  auto answer = api::runs_from_json({{"runs", runs}});
  REQUIRE(answer.is_ok());
  std::vector<std::string> ids;
  for (const api::RunSummary& r : runs_to_show(answer->runs)) ids.push_back(r.id);
  CHECK(ids == std::vector<std::string>{"r9", "r8", "r7", "r6", "r3"});
  CHECK(runs_to_show({}).empty());
}

TEST_CASE("monit fit width: cuts at a number of code points, not bytes") {
  CHECK(fit_width("abcdef", 3) == "abc");
  CHECK(fit_width("▁▂▃▄", 2) == "▁▂");
  CHECK(fit_width("ab", 5) == "ab");
  CHECK(fit_width("ab", 0) == "");
}

}  // namespace
}  // namespace corral::cli
