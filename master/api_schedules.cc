// The schedules API (docs/schedules.md):
//   POST   /schedules                 {"name": "nightly", "cron": "0 3 * * *", "catch_up": false,
//                                      and what POST /runs takes: "scenario", "instances",
//                                      "vars", "priority"}
//   GET    /schedules                 every schedule, by name
//   DELETE /schedules/<name>          forgets it
//   POST   /schedules/<name>/pause    no tick fires until resume
//   POST   /schedules/<name>/resume   ticks fire again, from now on
// Changes are answered once they are in the journal. (The route table is at the end.)
#include <spdlog/spdlog.h>

#include "master/api_body.h"
#include "master/schedule_service.h"
#include "shared/proc.h"

namespace corral::master {
namespace {
namespace api_schedules_detail {

using http::Response;
using nlohmann::json;

// The answer for a failed table call: 404 for no such schedule, 409 for a name taken.
Response schedule_error(const Status& s) {
  const int status = s.code() == Code::kNotFound        ? 404
                     : s.code() == Code::kAlreadyExists ? 409
                                                        : 400;
  return Response::error(status, s.message());
}

// The schedule's own fields of a POST /schedules body, into `s`; the error names the field.
Status read_schedule_fields(const json& body, Schedule& s) {
  json name = body.value("name", json());
  if (!name.is_string()) return invalid_argument("name: expected a string, got " + name.dump());
  s.name = name.get<std::string>();
  if (Status st = check_schedule_name(s.name); !st) return st;
  json cron = body.value("cron", json());
  if (!cron.is_string()) {
    return invalid_argument("cron: expected an expression like \"*/5 * * * *\", got " +
                            cron.dump());
  }
  auto parsed = config::Cron::parse(cron.get<std::string>());
  if (!parsed) return parsed.status();  // "cron: field 2 (hour): ..."
  s.cron = std::move(*parsed);
  json catch_up = body.value("catch_up", json(false));
  if (!catch_up.is_boolean()) {
    return invalid_argument("catch_up: expected true or false, got " + catch_up.dump());
  }
  s.catch_up = catch_up.get<bool>();
  return Status::ok();
}

}  // namespace api_schedules_detail
}  // namespace

void ScheduleService::api_add(const ApiCall& c) {
  using api_schedules_detail::schedule_error;
  auto body =
      submission_body(c, workers_.stopping(), "schedules",
                      {"name", "cron", "catch_up", "scenario", "instances", "vars", "priority"});
  if (!body) return;
  Schedule s;
  if (Status st = api_schedules_detail::read_schedule_fields(*body, s); !st) {
    c.respond.send(http::Response::error(400, st.message()));
    return;
  }
  auto req = runs_.request(*body);
  if (!req) {
    c.respond.send(http::Response::error(400, req.status().message()));
    return;
  }
  s.scenario = std::move(req->scenario);
  s.vars = std::move(req->vars);
  s.instances = req->count;
  s.priority = req->priority;
  const std::string name = s.name;
  if (Status st = table_.add(std::move(s), unix_ms_now()); !st) {
    c.respond.send(schedule_error(st));
    return;
  }
  arm();
  const Schedule& added = *table_.find(name);
  spdlog::info("schedule {} added: \"{}\" (UTC), {} instances of \"{}\", next at {}", name,
               added.cron.text(), added.instances, added.scenario->name,
               added.next_ms ? iso8601_utc(added.next_ms) : "never");
  respond_journaled(journal_, c.respond, 201, {{"schedule", table_.to_json(added)}});
}

void ScheduleService::api_list(const ApiCall& c) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, s] : table_.all()) list.push_back(table_.to_json(s));
  c.respond.send(http::Response::json(200, {{"schedules", list}}));
}

void ScheduleService::api_remove(const ApiCall& c) {
  const std::string& name = c.args.at(0);
  if (Status st = table_.remove(name); !st) {
    c.respond.send(api_schedules_detail::schedule_error(st));
    return;
  }
  arm();
  spdlog::info("schedule {} removed", name);
  respond_journaled(journal_, c.respond, 200, {{"removed", name}});
}

void ScheduleService::api_pause(const ApiCall& c) {
  auto s = table_.pause(c.args.at(0));
  if (!s) {
    c.respond.send(api_schedules_detail::schedule_error(s.status()));
    return;
  }
  arm();
  spdlog::info("schedule {} paused", (*s)->name);
  respond_journaled(journal_, c.respond, 200, {{"schedule", table_.to_json(**s)}});
}

void ScheduleService::api_resume(const ApiCall& c) {
  auto s = table_.resume(c.args.at(0), unix_ms_now());
  if (!s) {
    c.respond.send(api_schedules_detail::schedule_error(s.status()));
    return;
  }
  arm();
  spdlog::info("schedule {} resumed, next at {}", (*s)->name,
               (*s)->next_ms ? iso8601_utc((*s)->next_ms) : "never");
  respond_journaled(journal_, c.respond, 200, {{"schedule", table_.to_json(**s)}});
}

// The routes of schedules, in the README's order.
const std::vector<ApiRoute>& ScheduleService::routes() {
  static const std::vector<ApiRoute> routes = {
      {"POST", "/schedules", on<&ScheduleService::api_add>, false,
       "`{\"name\":\"nightly\",\"cron\":\"0 3 * * *\",\"catch_up\":false,\"scenario\":{...},"
       "\"instances\":N,\"vars\":{...},\"priority\":P}`: a run at each tick, in UTC"
       " ([docs/schedules.md](docs/schedules.md)); 201 `{\"schedule\":{...}}`; 400 names the"
       " field at fault (the cron field and token too); 409 when the name is taken"},
      {"GET", "/schedules", on<&ScheduleService::api_list>, false,
       "every schedule by name: cron, scenario, `paused`, `next_at`, `last_tick_at`,"
       " `last_fired_at`, `last_run`"},
      {"DELETE", "/schedules/{name}", on<&ScheduleService::api_remove>, false,
       "forgets a schedule (its runs stay)"},
      {"POST", "/schedules/{name}/pause", on<&ScheduleService::api_pause>, false,
       "no tick fires until it is resumed"},
      {"POST", "/schedules/{name}/resume", on<&ScheduleService::api_resume>, false,
       "ticks fire again from now on; those of the pause do not come back"},
  };
  return routes;
}

}  // namespace corral::master
