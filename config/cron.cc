#include "config/cron.h"

#include <bit>
#include <cctype>
#include <charconv>
#include <vector>

namespace corral::config {
namespace {
// Named inside the anonymous namespace: the unity build compiles this file with others of
// config/, whose private helpers must not meet these.
namespace cron_detail {

constexpr int64_t kMinuteMs = 60000;
constexpr int64_t kDayMinutes = 1440;
constexpr int64_t kSearchDays = 146097;  // 400 years: every calendar repeats within them

struct Field {
  const char* name;
  int low, high;
  const char* names[12];  // three-letter names for low, low+1, ...; empty when none
  const char* what;       // "a month (1-12 or jan-dec)"
};

constexpr Field kFields[5] = {
    {"minute", 0, 59, {}, "a number"},
    {"hour", 0, 23, {}, "a number"},
    {"day-of-month", 1, 31, {}, "a number"},
    {"month",
     1,
     12,
     {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"},
     "a month (1-12 or jan-dec)"},
    {"day-of-week",
     0,
     7,
     {"sun", "mon", "tue", "wed", "thu", "fri", "sat"},
     "a day of the week (0-7 or sun-sat)"},
};

std::string prefix(int field) {
  return "cron: field " + std::to_string(field + 1) + " (" + kFields[field].name + "): ";
}

// One value of a field: a number or a name.
Result<int> value_of(std::string_view token, int field) {
  const Field& f = kFields[field];
  for (int i = 0; i < 12 && f.names[i] != nullptr; ++i) {
    std::string_view name = f.names[i];
    bool same = token.size() == name.size();
    for (size_t k = 0; same && k < name.size(); ++k) {
      same = std::tolower(static_cast<unsigned char>(token[k])) == name[k];
    }
    if (same) return f.low + i;
  }
  int v = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  const bool digits = !token.empty() && std::isdigit(static_cast<unsigned char>(token[0]));
  if (!digits || end != token.data() + token.size() || ec == std::errc::invalid_argument) {
    return invalid_argument(prefix(field) + std::string(token) + " is not " + f.what);
  }
  if (ec == std::errc::result_out_of_range || v < f.low || v > f.high) {
    return invalid_argument(prefix(field) + std::string(token) + " is out of range " +
                            std::to_string(f.low) + "-" + std::to_string(f.high));
  }
  return v;
}

// One item of a list, as a bit mask over the field's values.
Result<uint64_t> item_bits(std::string_view item, int field) {
  const Field& f = kFields[field];
  std::string_view range = item;
  int step = 1;
  if (size_t slash = item.find('/'); slash != std::string_view::npos) {
    range = item.substr(0, slash);
    std::string_view text = item.substr(slash + 1);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), step);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || step < 1 ||
        step > f.high) {
      return invalid_argument(prefix(field) + "the step of " + std::string(item) +
                              " is not a number from 1 to " + std::to_string(f.high));
    }
    if (range != "*" && range.find('-') == std::string_view::npos) {
      return invalid_argument(prefix(field) + std::string(item) +
                              ": a step needs * or a range before it");
    }
  }
  int from = f.low, to = f.high;
  if (range != "*") {
    size_t dash = range.find('-');
    if (range.empty() || dash == 0 || dash + 1 == range.size()) {
      return invalid_argument(prefix(field) + std::string(item) +
                              " is not a value, a range or a step");
    }
    auto a = value_of(range.substr(0, dash), field);
    if (!a) return a.status();
    from = to = *a;
    if (dash != std::string_view::npos) {
      auto b = value_of(range.substr(dash + 1), field);
      if (!b) return b.status();
      to = *b;
      if (to < from)
        return invalid_argument(prefix(field) + std::string(range) + " goes backwards");
    }
  }
  uint64_t bits = 0;
  for (int v = from; v <= to; v += step) bits |= uint64_t{1} << v;
  return bits;
}

Result<uint64_t> field_bits(std::string_view text, int field) {
  uint64_t bits = 0;
  for (size_t start = 0;;) {
    size_t comma = text.find(',', start);
    std::string_view item_text = text.substr(start, comma - start);
    if (item_text.empty()) {
      return invalid_argument(prefix(field) + std::string(text) + " has an empty item");
    }
    auto item = item_bits(item_text, field);
    if (!item) return item.status();
    bits |= *item;
    if (comma == std::string_view::npos) return bits;
    start = comma + 1;
  }
}

std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

// Calendar arithmetic on days since 1970-01-01 (proleptic Gregorian; H. Hinnant's algorithms).
struct Civil {
  int64_t year;
  unsigned month, day;
};

Civil civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned day = doy - (153 * mp + 2) / 5 + 1;
  const unsigned month = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<int64_t>(yoe) + era * 400 + (month <= 2), month, day};
}

unsigned weekday_of(int64_t days) {  // 0 Sunday; 1970-01-01 was a Thursday
  return static_cast<unsigned>(days >= -4 ? (days + 4) % 7 : (days + 5) % 7 + 6);
}

unsigned days_in_month(int64_t year, unsigned month) {
  if (month == 2) {
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return leap ? 29 : 28;
  }
  return month == 4 || month == 6 || month == 9 || month == 11 ? 30 : 31;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The lowest set bit at or above `k` (k < 64), or -1.
int bit_from(uint64_t mask, int k) {
  const uint64_t above = mask & (~uint64_t{0} << k);
  return above == 0 ? -1 : std::countr_zero(above);
}
// The highest set bit at or below `k` (k < 64), or -1.
int bit_upto(uint64_t mask, int k) {
  const uint64_t below = k >= 63 ? mask : mask & ((uint64_t{1} << (k + 1)) - 1);
  return below == 0 ? -1 : 63 - std::countl_zero(below);
}

bool has(uint64_t mask, unsigned bit) { return (mask >> bit) & 1; }

// `days_` restricted to `months_`: does any month hold a day the field asks for? (February
// counts with 29 days: a leap year comes.)
bool some_day_exists(uint32_t days, uint16_t months) {
  for (unsigned m = 1; m <= 12; ++m) {
    if (has(months, m) && bit_from(days, 1) <= static_cast<int>(days_in_month(2000, m))) {
      return true;
    }
  }
  return false;
}

}  // namespace cron_detail
}  // namespace

// Each function below says `using namespace cron_detail` for itself: at namespace scope, the
// using-directive would reach the files batched after this one.

Result<Cron> Cron::parse(std::string_view text) {
  using namespace cron_detail;
  const std::vector<std::string_view> fields = split_fields(text);
  if (fields.size() != 5) {
    return invalid_argument(
        "cron: expected 5 fields (minute hour day-of-month month day-of-week), got " +
        std::to_string(fields.size()));
  }
  uint64_t bits[5];
  for (int i = 0; i < 5; ++i) {
    auto b = field_bits(fields[i], i);
    if (!b) return b.status();
    bits[i] = *b;
  }
  Cron c;
  c.minutes_ = bits[0];
  c.hours_ = static_cast<uint32_t>(bits[1]);
  c.days_ = static_cast<uint32_t>(bits[2]);
  c.months_ = static_cast<uint16_t>(bits[3]);
  c.weekdays_ = static_cast<uint8_t>((bits[4] | (bits[4] >> 7)) & 0x7f);  // 7 is Sunday, 0
  c.days_star_ = fields[2].front() == '*';
  c.weekdays_star_ = fields[4].front() == '*';
  const bool both_needed = c.days_star_ || c.weekdays_star_;
  if (both_needed && !some_day_exists(c.days_, c.months_)) {
    return invalid_argument(prefix(2) + "day " + std::to_string(bit_from(c.days_, 1)) +
                            " is in none of the months of field 4 (month), so the expression "
                            "never fires");
  }
  for (int i = 0; i < 5; ++i) c.text_ += (i ? " " : "") + std::string(fields[i]);
  return c;
}

bool Cron::day_matches(unsigned day_of_month, unsigned weekday) const {
  using namespace cron_detail;
  const bool dom = has(days_, day_of_month);
  const bool dow = has(weekdays_, weekday);
  return days_star_ || weekdays_star_ ? dom && dow : dom || dow;
}

int Cron::first_minute_from(int minute_of_day) const {
  using namespace cron_detail;
  const int h0 = minute_of_day / 60;
  for (int h = bit_from(hours_, h0); h >= 0; h = h < 23 ? bit_from(hours_, h + 1) : -1) {
    const int m = bit_from(minutes_, h == h0 ? minute_of_day % 60 : 0);
    if (m >= 0) return h * 60 + m;
  }
  return -1;
}

int Cron::last_minute_upto(int minute_of_day) const {
  using namespace cron_detail;
  const int h0 = minute_of_day / 60;
  for (int h = bit_upto(hours_, h0); h >= 0; h = h > 0 ? bit_upto(hours_, h - 1) : -1) {
    const int m = bit_upto(minutes_, h == h0 ? minute_of_day % 60 : 59);
    if (m >= 0) return h * 60 + m;
  }
  return -1;
}

std::optional<int64_t> Cron::next_after(int64_t unix_ms) const {
  using namespace cron_detail;
  const int64_t start = floor_div(unix_ms, kMinuteMs) + 1;  // minutes since the epoch
  int64_t day = floor_div(start, kDayMinutes);
  auto from = static_cast<int>(start - day * kDayMinutes);
  for (const int64_t last = day + kSearchDays; day <= last; ++day, from = 0) {
    const Civil c = civil_from_days(day);
    if (!has(months_, c.month)) {  // on to the 1st of the next month
      day += days_in_month(c.year, c.month) - c.day;
      continue;
    }
    if (!day_matches(c.day, weekday_of(day))) continue;
    if (int m = first_minute_from(from); m >= 0) return (day * kDayMinutes + m) * kMinuteMs;
  }
  return std::nullopt;
}

std::optional<int64_t> Cron::last_at_or_before(int64_t unix_ms) const {
  using namespace cron_detail;
  const int64_t end = floor_div(unix_ms, kMinuteMs);
  int64_t day = floor_div(end, kDayMinutes);
  auto upto = static_cast<int>(end - day * kDayMinutes);
  for (const int64_t first = day - kSearchDays; day >= first; --day, upto = kDayMinutes - 1) {
    const Civil c = civil_from_days(day);
    if (!has(months_, c.month)) {  // back to the last day of the previous month
      day -= c.day - 1;
      continue;
    }
    if (!day_matches(c.day, weekday_of(day))) continue;
    if (int m = last_minute_upto(upto); m >= 0) return (day * kDayMinutes + m) * kMinuteMs;
  }
  return std::nullopt;
}

bool Cron::matches(int64_t unix_ms) const {
  using namespace cron_detail;
  const int64_t minute = floor_div(unix_ms, kMinuteMs);
  const int64_t day = floor_div(minute, kDayMinutes);
  const auto of_day = static_cast<int>(minute - day * kDayMinutes);
  const Civil c = civil_from_days(day);
  return has(months_, c.month) && day_matches(c.day, weekday_of(day)) &&
         has(hours_, static_cast<unsigned>(of_day / 60)) &&
         has(minutes_, static_cast<unsigned>(of_day % 60));
}

}  // namespace corral::config
