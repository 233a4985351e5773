// Cron expressions: the five standard fields of crontab(5), read in UTC.
//
//   minute (0-59)  hour (0-23)  day-of-month (1-31)  month (1-12 or jan-dec)
//   day-of-week (0-7 or sun-sat; 0 and 7 are both Sunday)
//
// A field is `*`, or a list `a,b,...` of items; an item is a value `a`, a range `a-b`, or a step
// `*/n` or `a-b/n` (every n-th value of the range, from its start). Names are three letters, in
// any case, and work in ranges (`mon-fri`). No seconds field, no @daily and no L, W, # or ?.
//
// The day rule is Vixie cron's (Debian's `cron`): when day-of-month and day-of-week are both
// restricted, a day that matches either one fires; when either starts with `*` (`*` or `*/2`),
// a day must match both. So `0 0 1 * mon` fires on the 1st and on every Monday, while
// `0 0 */2 * mon` fires on Mondays with an odd day of the month.
//
// Pure values and functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shared/status.h"

namespace corral::config {

class Cron {
 public:
  // Never matches; parse() makes the useful ones.
  Cron() = default;

  // Reads an expression. Errors are kInvalidArgument and name the field and the token at fault:
  //   "cron: expected 5 fields (minute hour day-of-month month day-of-week), got 6"
  //   "cron: field 2 (hour): 24 is out of range 0-23"
  //   "cron: field 4 (month): foo is not a month (1-12 or jan-dec)"
  //   "cron: field 1 (minute): 5-1 goes backwards"
  //   "cron: field 3 (day-of-month): day 30 is in none of the months of field 4 (month), so the
  //    expression never fires"
  static Result<Cron> parse(std::string_view text);

  // The first tick strictly after `unix_ms`: the start of a matching minute, in Unix ms (UTC).
  // It looks at days, not minutes (`0 0 29 2 *` costs a few dozen steps a year). nullopt only
  // when nothing matches within 400 years, which parse() does not let happen.
  std::optional<int64_t> next_after(int64_t unix_ms) const;
  // The last tick at or before `unix_ms`, by the same rules; nullopt when none within 400 years.
  std::optional<int64_t> last_at_or_before(int64_t unix_ms) const;
  // Whether the minute that holds `unix_ms` matches.
  bool matches(int64_t unix_ms) const;

  // The expression with its fields separated by single spaces.
  const std::string& text() const { return text_; }

 private:
  bool day_matches(unsigned day_of_month, unsigned weekday) const;
  // The first matching minute of the day at or after `minute_of_day`, or -1.
  int first_minute_from(int minute_of_day) const;
  // The last matching minute of the day at or before `minute_of_day`, or -1.
  int last_minute_upto(int minute_of_day) const;

  uint64_t minutes_ = 0;        // bit m: minute m
  uint32_t hours_ = 0;          // bit h: hour h
  uint32_t days_ = 0;           // bit d: day of the month d (1-31)
  uint16_t months_ = 0;         // bit m: month m (1-12)
  uint8_t weekdays_ = 0;        // bit w: day of the week w, 0 Sunday to 6 Saturday (7 is put on 0)
  bool days_star_ = false;      // day-of-month starts with '*': not restricted
  bool weekdays_star_ = false;  // day-of-week starts with '*'
  std::string text_;
};

}  // namespace corral::config
