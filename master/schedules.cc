#include "master/schedules.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "config/scenario/parse.h"
#include "master/runs.h"
#include "shared/proc.h"

namespace corral::master {
namespace {
// Named: the unity build compiles this file with others of master/, whose private helpers
// must not meet these.
namespace schedules_detail {

using nlohmann::json;

constexpr size_t kMaxName = 64;

json time_json(int64_t ms) { return ms != 0 ? json(iso8601_utc(ms)) : json(nullptr); }

// "the tick at T" or "the ticks from A to B".
std::string ticks_text(int64_t first, int64_t last) {
  if (first == last) return "the tick at " + iso8601_utc(first);
  return "the ticks from " + iso8601_utc(first) + " to " + iso8601_utc(last);
}

}  // namespace schedules_detail
}  // namespace

Status check_schedule_name(const std::string& name) {
  if (name.empty() || name.size() > schedules_detail::kMaxName) {
    return invalid_argument("name: expected 1 to 64 characters, got " +
                            std::to_string(name.size()));
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return invalid_argument("name: \"" + name +
                              "\" may hold only letters, digits, '.', '_' and '-'");
    }
  }
  if (name.front() == '.') return invalid_argument("name: \"" + name + "\" starts with '.'");
  return Status::ok();
}

std::function<Status(journal::Store&, const std::string&)> fire_write(ScheduleTick tick,
                                                                      int64_t fired_ms) {
  return [tick = std::move(tick), fired_ms](journal::Store& s, const std::string& run_id) {
    return s.put_fire({tick.name, tick.tick_ms, run_id, fired_ms});
  };
}

std::vector<ScheduleTick> Schedules::restore(const std::vector<journal::ScheduleRow>& rows,
                                             int64_t now_ms) {
  using schedules_detail::ticks_text;
  std::vector<ScheduleTick> fire;
  for (const journal::ScheduleRow& row : rows) {
    auto built = schedule_from_row(row);
    if (!built) {
      spdlog::error("journal: schedule {}: {}; it is left out", row.name, built.status().message());
      continue;
    }
    Schedule& s = schedules_[row.name] = std::move(*built);
    set_next(s);
    if (s.next_ms == 0 || s.next_ms > now_ms) continue;
    const int64_t first = s.next_ms;
    const int64_t last = s.cron.last_at_or_before(now_ms).value_or(first);
    s.after_ms = last;
    set_next(s);
    if (s.catch_up) {
      spdlog::info("schedule {}: {} passed while the daemon was down; catch_up fires {} now",
                   s.name, ticks_text(first, last), first == last ? "it" : "the last once");
      fire.push_back({s.name, last});
      continue;
    }
    spdlog::warn("schedule {}: {} passed while the daemon was down; skipped (catch_up is off)",
                 s.name, ticks_text(first, last));
    journal_state(s);
  }
  return fire;
}

Status Schedules::add(Schedule s, int64_t now_ms) {
  if (schedules_.count(s.name) != 0) {
    return Status(Code::kAlreadyExists, "a schedule named \"" + s.name + "\" exists");
  }
  s.created_ms = now_ms;
  s.after_ms = now_ms;
  s.last_tick_ms = 0;
  s.last_fired_ms = 0;
  s.last_run.clear();
  set_next(s);
  journal_write([row = schedule_row(s)](journal::Store& st) { return st.put_schedule(row); });
  schedules_[s.name] = std::move(s);
  return Status::ok();
}

Status Schedules::remove(const std::string& name) {
  if (schedules_.erase(name) == 0) {
    return Status(Code::kNotFound, "no schedule \"" + name + "\"");
  }
  journal_write([name](journal::Store& st) { return st.delete_schedule(name); });
  return Status::ok();
}

Result<const Schedule*> Schedules::pause(const std::string& name) {
  auto it = schedules_.find(name);
  if (it == schedules_.end()) return Status(Code::kNotFound, "no schedule \"" + name + "\"");
  Schedule& s = it->second;
  if (!s.paused) {
    s.paused = true;
    set_next(s);
    journal_state(s);
  }
  return &s;
}

Result<const Schedule*> Schedules::resume(const std::string& name, int64_t now_ms) {
  auto it = schedules_.find(name);
  if (it == schedules_.end()) return Status(Code::kNotFound, "no schedule \"" + name + "\"");
  Schedule& s = it->second;
  if (s.paused) {
    s.paused = false;
    s.after_ms = std::max(s.after_ms, now_ms);
    set_next(s);
    journal_state(s);
  }
  return &s;
}

const Schedule* Schedules::find(const std::string& name) const {
  auto it = schedules_.find(name);
  return it == schedules_.end() ? nullptr : &it->second;
}

std::vector<ScheduleTick> Schedules::due(int64_t now_ms) {
  std::vector<ScheduleTick> out;
  for (auto& [name, s] : schedules_) {
    if (s.next_ms == 0 || s.next_ms > now_ms) continue;
    const int64_t first = s.next_ms;
    const int64_t last = s.cron.last_at_or_before(now_ms).value_or(first);
    if (last != first) {
      spdlog::warn("schedule {}: the clock passed {} at once; only the last fires", s.name,
                   schedules_detail::ticks_text(first, last));
    }
    s.after_ms = last;
    set_next(s);
    out.push_back({s.name, last});
  }
  return out;
}

std::optional<int64_t> Schedules::next_due() const {
  std::optional<int64_t> next;
  for (const auto& [name, s] : schedules_) {
    if (s.next_ms != 0 && (!next || s.next_ms < *next)) next = s.next_ms;
  }
  return next;
}

void Schedules::fired(const ScheduleTick& tick, const std::string& run_id, int64_t fired_ms) {
  auto it = schedules_.find(tick.name);
  if (it == schedules_.end()) return;
  it->second.last_tick_ms = tick.tick_ms;
  it->second.last_fired_ms = fired_ms;
  it->second.last_run = run_id;
}

void Schedules::skipped(const ScheduleTick& tick, const std::string& why) {
  spdlog::warn("schedule {}: the tick at {} is skipped: {}", tick.name, iso8601_utc(tick.tick_ms),
               why);
  if (const Schedule* s = find(tick.name)) journal_state(*s);
}

nlohmann::json Schedules::to_json(const Schedule& s) const {
  using schedules_detail::time_json;
  return {{"name", s.name},
          {"cron", s.cron.text()},
          {"scenario", s.scenario->name},
          {"instances", s.instances},
          {"priority", s.priority},
          {"vars", s.vars},
          {"catch_up", s.catch_up},
          {"paused", s.paused},
          {"created_at", time_json(s.created_ms)},
          {"next_at", time_json(s.next_ms)},
          {"last_tick_at", time_json(s.last_tick_ms)},
          {"last_fired_at", time_json(s.last_fired_ms)},
          {"last_run", s.last_run.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.last_run)}};
}

void Schedules::set_next(Schedule& s) {
  s.next_ms = s.paused ? 0 : s.cron.next_after(s.after_ms).value_or(0);
}

void Schedules::journal_state(const Schedule& s) {
  journal_write([name = s.name, paused = s.paused, after = s.after_ms](journal::Store& st) {
    return st.set_schedule(name, paused, after);
  });
}

void Schedules::journal_write(std::function<Status(journal::Store&)> op) {
  if (journal_ != nullptr) journal_->write(std::move(op));
}

journal::ScheduleRow schedule_row(const Schedule& s) {
  return {s.name,        s.cron.text(),  s.scenario->source.dump(),
          s.vars.dump(), s.instances,    s.priority,
          s.catch_up,    s.paused,       s.created_ms,
          s.after_ms,    s.last_tick_ms, s.last_fired_ms,
          s.last_run};
}

Result<Schedule> schedule_from_row(const journal::ScheduleRow& row) {
  using nlohmann::json;
  auto cron = config::Cron::parse(row.cron);
  if (!cron) return cron.status();
  json vars = json::parse(row.vars, nullptr, false);
  if (!vars.is_object()) return invalid_argument("its vars in the journal are not a JSON object");
  std::set<std::string> extra;
  for (const auto& [k, v] : vars.items()) extra.insert(k);
  json doc = json::parse(row.scenario, nullptr, false);
  auto scenario = scenario::parse_scenario(doc.is_discarded() ? json() : doc, extra);
  if (!scenario) {
    return invalid_argument("its scenario in the journal does not parse: scenario." +
                            scenario.status().message());
  }
  if (row.instances == 0 || row.instances > kMaxRunInstances) {
    return invalid_argument("the journal gives it " + std::to_string(row.instances) + " instances");
  }
  Schedule s;
  s.name = row.name;
  s.cron = std::move(*cron);
  s.scenario = std::move(*scenario);
  s.vars = std::move(vars);
  s.instances = row.instances;
  s.priority = row.priority;
  s.catch_up = row.catch_up;
  s.paused = row.paused;
  s.created_ms = row.created_ms;
  s.after_ms = std::max(row.after_ms, row.last_tick_ms);  // a tick that fired never comes back
  s.last_tick_ms = row.last_tick_ms;
  s.last_fired_ms = row.last_fired_ms;
  s.last_run = row.last_run;
  return s;
}

}  // namespace corral::master
