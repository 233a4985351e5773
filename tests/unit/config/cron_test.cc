// Cron expressions: the five fields, their errors, and the next (and last) tick from a time.
#include <catch2/catch.hpp>

#include <chrono>
#include <ctime>
#include <random>

#include "config/cron.h"
#include "shared/proc.h"

namespace corral::config {
namespace {

// "2026-02-28 23:59" (UTC) in Unix ms.
int64_t at(const char* text) {
  std::tm tm{};
  REQUIRE(strptime(text, "%Y-%m-%d %H:%M", &tm) != nullptr);
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

Cron cron(const char* text) {
  auto c = Cron::parse(text);
  INFO(text << ": " << c.status().message());
  REQUIRE(c.is_ok());
  return *c;
}

// The next tick after `from`, as "2026-03-01T00:00:00Z", or "never".
std::string next(const char* expr, const char* from) {
  auto t = cron(expr).next_after(at(from));
  return t ? iso8601_utc(*t) : "never";
}
std::string last(const char* expr, const char* upto) {
  auto t = cron(expr).last_at_or_before(at(upto));
  return t ? iso8601_utc(*t) : "never";
}

// The minutes of the hour that match, in 2026-01-01 00:xx (a Thursday).
std::vector<int> minutes_of(const char* expr) {
  std::vector<int> out;
  const Cron c = cron(expr);
  for (int m = 0; m < 60; ++m) {
    if (c.matches(at("2026-01-01 00:00") + m * 60000)) out.push_back(m);
  }
  return out;
}

// The days of January 2026 that match at 00:00 (Jan 1 is a Thursday, Jan 4 a Sunday).
std::vector<int> january_days(const char* expr) {
  std::vector<int> out;
  const Cron c = cron(expr);
  for (int d = 1; d <= 31; ++d) {
    if (c.matches(at("2026-01-01 00:00") + (d - 1) * 86400000LL)) out.push_back(d);
  }
  return out;
}

using V = std::vector<int>;

TEST_CASE("cron: * in every field fires every minute, strictly after the time asked") {
  CHECK(next("* * * * *", "2026-03-01 10:00") == "2026-03-01T10:01:00Z");
  // Strictly after: from the middle of a minute, and from a tick itself.
  CHECK(cron("* * * * *").next_after(at("2026-03-01 10:00") + 30000) == at("2026-03-01 10:01"));
  CHECK(cron("* * * * *").next_after(at("2026-03-01 10:00") - 1) == at("2026-03-01 10:00"));
  CHECK(last("* * * * *", "2026-03-01 10:00") == "2026-03-01T10:00:00Z");
  CHECK(cron("* * * * *").last_at_or_before(at("2026-03-01 10:00") - 1) == at("2026-03-01 09:59"));
}

TEST_CASE("cron: values, lists, ranges and steps pick the minutes they say") {
  CHECK(minutes_of("5 * * * *") == V{5});
  CHECK(minutes_of("0,15,45 * * * *") == V{0, 15, 45});
  CHECK(minutes_of("10-13 * * * *") == V{10, 11, 12, 13});
  CHECK(minutes_of("*/15 * * * *") == V{0, 15, 30, 45});
  CHECK(minutes_of("10-30/10 * * * *") == V{10, 20, 30});
  CHECK(minutes_of("1-10/4,50-59/5,30 * * * *") == V{1, 5, 9, 30, 50, 55});
  CHECK(minutes_of("58-59,0 * * * *") == V{0, 58, 59});
  CHECK(minutes_of("*/59 * * * *") == V{0, 59});
  CHECK(minutes_of("7-7 * * * *") == V{7});
  CHECK(minutes_of("* 1 * * *").empty());  // the wrong hour
  CHECK(next("30 */6 * * *", "2026-03-01 06:30") == "2026-03-01T12:30:00Z");
  CHECK(next("0 9-17/4 * * *", "2026-03-01 13:00") == "2026-03-01T17:00:00Z");
}

TEST_CASE("cron: month and day names, in any case, also in ranges and lists") {
  CHECK(next("0 0 1 jan *", "2026-03-01 00:00") == "2027-01-01T00:00:00Z");
  CHECK(next("0 0 1 MAR-may/2 *", "2026-03-01 00:00") == "2026-05-01T00:00:00Z");
  CHECK(next("0 0 1 Dec,feb *", "2026-03-01 00:00") == "2026-12-01T00:00:00Z");
  CHECK(january_days("0 0 * * mon-fri") ==
        V{1, 2, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 19, 20, 21, 22, 23, 26, 27, 28, 29, 30});
  CHECK(january_days("0 0 * * SAT,sun") == V{3, 4, 10, 11, 17, 18, 24, 25, 31});
  CHECK(january_days("0 0 * * 1-5") == january_days("0 0 * * mon-fri"));
}

TEST_CASE("cron: 0 and 7 are both Sunday, alone and in ranges") {
  const V sundays{4, 11, 18, 25};
  CHECK(january_days("0 0 * * 0") == sundays);
  CHECK(january_days("0 0 * * 7") == sundays);
  CHECK(january_days("0 0 * * sun") == sundays);
  CHECK(january_days("0 0 * * 6-7") == V{3, 4, 10, 11, 17, 18, 24, 25, 31});
  CHECK(january_days("0 0 * * 0-7").size() == 31);
  CHECK(january_days("0 0 * * 5-7") == january_days("0 0 * * fri,sat,sun"));
}

TEST_CASE("cron: with both day fields restricted, a day matching either one fires") {
  // The 13th, or any Friday (Jan 2026: Fridays are 2, 9, 16, 23, 30).
  CHECK(january_days("0 0 13 * fri") == V{2, 9, 13, 16, 23, 30});
  CHECK(january_days("0 0 1,15 * mon") == V{1, 5, 12, 15, 19, 26});
  // Restricted to a month: the other months' Fridays do not count.
  CHECK(next("0 0 13 feb fri", "2026-01-01 00:00") == "2026-02-06T00:00:00Z");
}

TEST_CASE("cron: when a day field starts with *, a day must match both") {
  CHECK(january_days("0 0 * * fri") == V{2, 9, 16, 23, 30});
  CHECK(january_days("0 0 13 * *") == V{13});
  // */2 counts as *: odd days that are also Fridays, as Vixie cron reads it.
  CHECK(january_days("0 0 */2 * fri") == V{9, 23});
  CHECK(january_days("0 0 1-10 * */3") == V{3, 4, 7, 10});  // */3: sun, wed, sat
}

TEST_CASE("cron: the next tick over month ends, leap years and a year's end") {
  CHECK(next("0 0 31 * *", "2026-01-31 00:00") == "2026-03-31T00:00:00Z");
  CHECK(next("0 0 30 * *", "2026-01-30 12:00") == "2026-03-30T00:00:00Z");
  CHECK(next("59 23 * * *", "2026-02-28 23:59") == "2026-03-01T23:59:00Z");
  CHECK(next("0 0 29 2 *", "2026-01-01 00:00") == "2028-02-29T00:00:00Z");
  CHECK(next("0 0 29 2 *", "2028-02-29 00:00") == "2032-02-29T00:00:00Z");
  // 2100 is not a leap year; 2000 was.
  CHECK(next("0 0 29 2 *", "2096-03-01 00:00") == "2104-02-29T00:00:00Z");
  CHECK(next("0 0 29 2 *", "1999-01-01 00:00") == "2000-02-29T00:00:00Z");
  CHECK(next("* * * * *", "2026-12-31 23:59") == "2027-01-01T00:00:00Z");
  CHECK(next("0 0 1 1 *", "2026-01-01 00:00") == "2027-01-01T00:00:00Z");
  CHECK(next("30 4 * * *", "2026-12-31 05:00") == "2027-01-01T04:30:00Z");
  CHECK(next("0 0 * * 0", "2026-12-31 00:00") == "2027-01-03T00:00:00Z");
  CHECK(next("0 12 31 dec *", "2026-12-31 12:00") == "2027-12-31T12:00:00Z");
  // Feb 29 that is a Sunday (*/7 on day-of-week: 0 and 7, both Sunday; starts with *: AND).
  CHECK(next("0 0 29 2 */7", "2026-01-01 00:00") == "2032-02-29T00:00:00Z");
}

TEST_CASE("cron: the last tick at or before a time, over the same edges") {
  CHECK(last("0 0 31 * *", "2026-03-30 00:00") == "2026-01-31T00:00:00Z");
  CHECK(last("0 0 29 2 *", "2028-02-28 23:59") == "2024-02-29T00:00:00Z");
  CHECK(last("0 0 29 2 *", "2104-01-01 00:00") == "2096-02-29T00:00:00Z");
  CHECK(last("0 0 1 1 *", "2027-01-01 00:00") == "2027-01-01T00:00:00Z");
  CHECK(last("0 0 1 1 *", "2026-12-31 23:59") == "2026-01-01T00:00:00Z");
  CHECK(last("15 3,9 * * *", "2026-03-01 09:14") == "2026-03-01T03:15:00Z");
  CHECK(last("15 3,9 * * *", "2026-03-01 03:14") == "2026-02-28T09:15:00Z");
  CHECK(last("0 0 13 * fri", "2026-01-12 00:00") == "2026-01-09T00:00:00Z");
}

// A minute-by-minute search, to check the day-by-day one against.
std::optional<int64_t> brute_next(const Cron& c, int64_t from, int64_t limit) {
  for (int64_t t = (from / 60000 + 1) * 60000; t <= limit; t += 60000) {
    if (c.matches(t)) return t;
  }
  return std::nullopt;
}

TEST_CASE("cron: next and last ticks agree with a minute-by-minute search") {
  const char* exprs[] = {"* * * * *",     "*/7 * * * *",    "0 */5 * * *",      "13 4 * * *",
                         "0 0 1,15 * *",  "0 0 * * mon",    "0 0 13 * fri",     "59 23 28-31 * *",
                         "0 0 */2 * fri", "0 12 * feb sun", "5,10 1-3 * * 6,0", "0 0 31 * *",
                         "45 22 * 2 *",   "0 6 1-7 * 1",    "*/30 */12 29 2 *"};
  std::mt19937_64 rng(13);
  const int64_t base = at("2023-12-01 00:00");
  const int64_t window = 70LL * 86400000;  // each expression ticks within 70 days
  for (const char* e : exprs) {
    const Cron c = cron(e);
    for (int i = 0; i < 6; ++i) {
      const int64_t from = base + static_cast<int64_t>(rng() % (3LL * 365 * 86400000));
      CAPTURE(e, iso8601_utc(from));
      auto want = brute_next(c, from, from + window);
      auto got = c.next_after(from);
      if (!want) continue;  // sparse: nothing in the window (the 29th of February, the 31st)
      REQUIRE(got);
      CHECK(iso8601_utc(*got) == iso8601_utc(*want));
      // The tick before `got` is at or before `from`: nothing was skipped.
      auto before = c.last_at_or_before(*got - 1);
      REQUIRE(before);
      CHECK(*before <= from);
      CHECK(c.last_at_or_before(*got) == got);
    }
  }
}

TEST_CASE("cron: a leap-day expression takes steps by day, not by minute") {
  const Cron c = cron("0 0 29 2 *");
  const auto start = std::chrono::steady_clock::now();
  int64_t t = at("2097-03-01 00:00");  // the next is seven years away, past 2100
  for (int i = 0; i < 2000; ++i) REQUIRE(c.next_after(t + i));
  const auto took = std::chrono::steady_clock::now() - start;
  // Minute by minute, each call would look at 3.7 million minutes: hours for all of them.
  CHECK(took < std::chrono::seconds(2));
  CHECK(c.next_after(t) == at("2104-02-29 00:00"));
}

TEST_CASE("cron: every error names the field and the token at fault") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"", "cron: expected 5 fields (minute hour day-of-month month day-of-week), got 0"},
      {"* * * *", "cron: expected 5 fields (minute hour day-of-month month day-of-week), got 4"},
      {"* * * * * *",
       "cron: expected 5 fields (minute hour day-of-month month day-of-week), got 6"},
      {"60 * * * *", "cron: field 1 (minute): 60 is out of range 0-59"},
      {"0 24 * * *", "cron: field 2 (hour): 24 is out of range 0-23"},
      {"0 0 0 * *", "cron: field 3 (day-of-month): 0 is out of range 1-31"},
      {"0 0 32 * *", "cron: field 3 (day-of-month): 32 is out of range 1-31"},
      {"0 0 * 13 *", "cron: field 4 (month): 13 is out of range 1-12"},
      {"0 0 * * 8", "cron: field 5 (day-of-week): 8 is out of range 0-7"},
      {"0 0 * * 99999999999", "cron: field 5 (day-of-week): 99999999999 is out of range 0-7"},
      {"x * * * *", "cron: field 1 (minute): x is not a number"},
      {"jan * * * *", "cron: field 1 (minute): jan is not a number"},
      {"0 0 * foo *", "cron: field 4 (month): foo is not a month (1-12 or jan-dec)"},
      {"0 0 * january *", "cron: field 4 (month): january is not a month (1-12 or jan-dec)"},
      {"0 0 * * mon-funday",
       "cron: field 5 (day-of-week): funday is not a day of the week (0-7 or sun-sat)"},
      {"0 0 * mon *", "cron: field 4 (month): mon is not a month (1-12 or jan-dec)"},
      {"-5 * * * *", "cron: field 1 (minute): -5 is not a value, a range or a step"},
      {"5- * * * *", "cron: field 1 (minute): 5- is not a value, a range or a step"},
      {"1-2-3 * * * *", "cron: field 1 (minute): 2-3 is not a number"},
      {"+5 * * * *", "cron: field 1 (minute): +5 is not a number"},
      {"30-10 * * * *", "cron: field 1 (minute): 30-10 goes backwards"},
      {"0 0 * dec-jan *", "cron: field 4 (month): dec-jan goes backwards"},
      {"1,,2 * * * *", "cron: field 1 (minute): 1,,2 has an empty item"},
      {"1, * * * *", "cron: field 1 (minute): 1, has an empty item"},
      {"*/0 * * * *", "cron: field 1 (minute): the step of */0 is not a number from 1 to 59"},
      {"*/60 * * * *", "cron: field 1 (minute): the step of */60 is not a number from 1 to 59"},
      {"0 */x * * *", "cron: field 2 (hour): the step of */x is not a number from 1 to 23"},
      {"0 */ * * *", "cron: field 2 (hour): the step of */ is not a number from 1 to 23"},
      {"5/10 * * * *", "cron: field 1 (minute): 5/10: a step needs * or a range before it"},
      {"*-5 * * * *", "cron: field 1 (minute): * is not a number"},
      {"0 0 30 2 *",
       "cron: field 3 (day-of-month): day 30 is in none of the months of field 4 (month), so "
       "the expression never fires"},
      {"0 0 31 apr,jun,sep,nov *",
       "cron: field 3 (day-of-month): day 31 is in none of the months of field 4 (month), so "
       "the expression never fires"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    auto got = Cron::parse(c.text);
    REQUIRE_FALSE(got.is_ok());
    CHECK(got.status().code() == Code::kInvalidArgument);
    CHECK(got.status().message() == c.error);
  }
}

TEST_CASE("cron: a day that never comes in those months is fine when day-of-week is restricted") {
  // Either rule: any Monday of February fires, though February has no 30th.
  CHECK(next("0 0 30 2 mon", "2026-01-01 00:00") == "2026-02-02T00:00:00Z");
  CHECK(next("0 0 29 2 *", "2026-01-01 00:00") == "2028-02-29T00:00:00Z");
}

TEST_CASE("cron: the text is the five fields with single spaces, as given") {
  CHECK(cron("  */5\t*  * *   MON-fri ").text() == "*/5 * * * MON-fri");
}

}  // namespace
}  // namespace corral::config
