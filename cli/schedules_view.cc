#include "cli/schedules_view.h"

#include "cli/format.h"

namespace corral::cli {
namespace {
namespace schedules_view_detail {

// "2026-12-03T13:05:00Z" as "2026-12-03 13:05" (ticks are whole minutes); "-" when there is none.
std::string minute_cell(const nlohmann::json& schedule, const char* key) {
  std::string text = json_string(schedule, key);
  if (text.empty()) return "-";
  if (text.size() >= 16 && text[10] == 'T') return text.substr(0, 10) + " " + text.substr(11, 5);
  return text;
}

}  // namespace schedules_view_detail
}  // namespace

std::string render_schedules_table(const nlohmann::json& schedules, TableStyle style) {
  using schedules_view_detail::minute_cell;
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : schedules.is_array() ? schedules : nlohmann::json::array()) {
    const nlohmann::json paused_field = json_field(s, "paused");
    const bool paused = paused_field.is_boolean() && paused_field.get<bool>();
    const std::string run = json_string(s, "last_run");
    rows.push_back({json_string(s, "name"), json_string(s, "cron"), json_string(s, "scenario"),
                    std::to_string(static_cast<long>(json_number(s, "instances"))),
                    paused ? "paused" : "active", minute_cell(s, "next_at"),
                    minute_cell(s, "last_tick_at"), run.empty() ? "-" : run});
  }
  return render_table(
      {"name", "cron (UTC)", "scenario", "instances", "state", "next", "last tick", "last run"},
      rows, style);
}

}  // namespace corral::cli
