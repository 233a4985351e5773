// `corral schedule ls`: the table of GET /schedules.
#include <catch2/catch.hpp>

#include "cli/schedules_view.h"

namespace corral::cli {
namespace {

using nlohmann::json;

TEST_CASE("schedules view: a row per schedule, times in UTC to the minute, - for none") {
  const json schedules = json::array({{{"name", "nightly"},
                                       {"cron", "0 3 * * *"},
                                       {"scenario", "a-b-c-chain"},
                                       {"instances", 10},
                                       {"paused", false},
                                       {"next_at", "2026-12-04T03:00:00Z"},
                                       {"last_tick_at", "2026-12-03T03:00:00Z"},
                                       {"last_run", "r12-ab34"}},
                                      {{"name", "five"},
                                       {"cron", "*/5 * * * *"},
                                       {"scenario", "ping"},
                                       {"instances", 1},
                                       {"paused", true},
                                       {"next_at", nullptr},
                                       {"last_tick_at", nullptr},
                                       {"last_run", nullptr}}});
  const std::string rule =
      "+---------+-------------+-------------+-----------+--------+------------------+"
      "------------------+----------+\n";
  CHECK(render_schedules_table(schedules, TableStyle::kAscii) ==
        rule +
            "| name    | cron (UTC)  | scenario    | instances | state  | next             |"
            " last tick        | last run |\n" +
            rule +
            "| nightly | 0 3 * * *   | a-b-c-chain | 10        | active | 2026-12-04 03:00 |"
            " 2026-12-03 03:00 | r12-ab34 |\n"
            "| five    | */5 * * * * | ping        | 1         | paused | -                |"
            " -                | -        |\n" +
            rule);
}

TEST_CASE("schedules view: no schedules is a header alone, and odd JSON does not throw") {
  const std::string empty = render_schedules_table(json::array(), TableStyle::kAscii);
  CHECK(empty.find("| name ") != std::string::npos);
  CHECK(std::count(empty.begin(), empty.end(), '\n') == 4);  // rule, header, rule, rule
  const std::string odd = render_schedules_table(
      json::array({{{"name", 3}, {"paused", "yes"}, {"next_at", 12}}, "x"}), TableStyle::kAscii);
  CHECK(odd.find("| active ") != std::string::npos);
}

}  // namespace
}  // namespace corral::cli
