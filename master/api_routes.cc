// Every route of the control API, in the order the README lists them. Adding a route is a line
// here and its handler, a member function of the part that owns what the route serves: `on<&
// RunService::api_get>` calls RunService::api_get (run_service.h), and so on for ScheduleService
// (schedule_service.h), LoadService (load_service.h), ClusterMember (cluster_member.h) and
// Daemon (api.cc: probes, workers, config; api_logs.cc; api_dashboard.cc). The README's "Control
// API" table is this list: the unit test "control API: the README lists every route" prints it when
// they differ.
#include "master/cluster_member.h"
#include "master/daemon_impl.h"
#include "master/load_service.h"
#include "master/run_service.h"
#include "master/schedule_service.h"

namespace corral::master {
namespace {

// on<&Part::handler>: the table's function that calls `handler` on the part.
template <auto Handler>
struct Bound;
template <class Part, void (Part::*Handler)(const ApiCall&)>
struct Bound<Handler> {
  static void call(ApiParts& p, const ApiCall& c) { (std::get<Part*>(p)->*Handler)(c); }
};
template <auto Handler>
constexpr auto on = &Bound<Handler>::call;

}  // namespace

const std::vector<ApiRoute>& Daemon::api_routes() {
  static const std::vector<ApiRoute> routes = {
      {"GET", "/health", on<&Daemon::api_health>, true,
       "`{\"status\":\"ok\",\"workers_ready\":2,\"workers_wanted\":2,\"journal\":{\"ok\":true,...},"
       "...}`;"
       " `status` is `degraded` while journal writes fail"},
      {"GET", "/cluster", on<&ClusterMember::api_cluster>, false,
       "the hosts sharing this daemon's PostgreSQL journal: `{\"self\":{\"id\",\"epoch\","
       "\"alive\"},\"hosts\":[{\"id\",\"address\",\"epoch\",\"heartbeat_age_ms\",\"held\","
       "\"capacity\",\"state\":\"alive|dead\"}]}`; 404 with an SQLite journal"
       " ([docs/cluster.md](docs/cluster.md))"},
      {"GET", "/latency", on<&Daemon::api_latency>, true,
       "a tiny answer straight from the master's loop: the probe to watch under load"},
      {"GET", "/metrics", on<&Daemon::api_metrics>, false,
       "Prometheus text format ([docs/operations.md](docs/operations.md#prometheus-and-grafana))"},
      {"GET", "/config", on<&Daemon::api_config>, false,
       "the daemon's effective settings (`api_token` masked), its config file, and the changes"
       " a reload took that need a master restart"},
      {"GET", "/workers", on<&Daemon::api_workers>, false,
       "every slot: pid, state, restarts, uptime, RSS, CPU (`cpu_percent` of one CPU over the last"
       " second), heartbeat and loop lag, instances"
       " (`instances`: placed by the master; `active`: counted by the worker), last exit"},
      {"POST", "/workers/scale", on<&Daemon::api_scale>, false, "`{\"workers\":N}`"},
      {"POST", "/workers/restart", on<&Daemon::api_restart>, false,
       "`{}` (every slot) or `{\"slot\":k}`"},
      {"POST", "/workers/reload", on<&Daemon::api_reload_start>, false,
       "starts a reload: 202 `{\"reload\":{...}}`, 409 while one runs"},
      {"GET", "/workers/reload", on<&Daemon::api_reload_get>, false,
       "`{\"reload\":{\"number\":2,\"state\":\"running|done|failed\",\"replaced\":[0],"
       "\"slot\":1,\"error\":\"...\"}}`"},
      {"POST", "/shutdown", on<&Daemon::api_shutdown>, false, "stops the daemon gracefully"},
      {"POST", "/runs", on<&RunService::api_submit>, false,
       "`{\"scenario\":{...},\"instances\":N,\"vars\":{...},\"priority\":P}`, or"
       " `\"data\":{\"path\":...}` for one instance per row of a file: 201"
       " `{\"run\":\"r1-c034\",\"instances\":N}`; 400 names the field at fault; 429 when the"
       " queue is full"},
      {"GET", "/runs", on<&RunService::api_list>, false,
       "recent runs with counts, newest first; `?limit=200`"},
      {"DELETE", "/runs", on<&RunService::api_prune>, false,
       "forgets finished runs; `?older_than=7d` (default: the configured retention)"},
      {"GET", "/runs/{id}", on<&RunService::api_get>, false,
       "counts, durations, top failures, the scenario's steps (`[{\"step\",\"name\"}]`)"},
      {"DELETE", "/runs/{id}", on<&RunService::api_cancel>, false, "cancels what has not finished"},
      {"POST", "/runs/{id}/resume", on<&RunService::api_resume>, false,
       "places a quarantined run's instances again (`state` was `quarantined`: its workers kept"
       " dying); 409 when it is not quarantined"},
      {"GET", "/runs/{id}/instances", on<&RunService::api_instances>, false,
       "`?state=failed&limit=100&from=0&steps=true` (`limit` at most 10,000); `next` is the"
       " index to ask `from` for more (a finished run is read back from the journal a page at"
       " a time)"},
      {"GET", "/runs/{id}/instances/{n}", on<&RunService::api_instance>, false,
       "one instance's step history"},
      {"POST", "/loads", on<&LoadService::api_start>, false,
       "`{\"scenario\":{...},\"load\":{...},\"vars\":{...}}`: a load test"
       " ([docs/load.md](docs/load.md#through-the-api))"},
      {"GET", "/loads", on<&LoadService::api_list>, false, "load tests, running and recent"},
      {"GET", "/loads/{id}", on<&LoadService::api_get>, false, "one load test with its series"},
      {"DELETE", "/loads/{id}", on<&LoadService::api_stop>, false, "stops a load test"},
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
      {"GET", "/logs", on<&Daemon::api_logs>, false,
       "the last lines of `master.log` and the `worker-<slot>.log` files merged in time order:"
       " `{\"dir\",\"files\",\"lines\"}`; `?lines=200` (at most 1,000), `&source=master` or"
       " `worker-0` for one file"},
      {"POST", "/callbacks/{token}", on<&RunService::api_callback>, true,
       "completes an instance's callback step with the JSON body: 202 once journaled; 404 for"
       " a token this daemon did not make, 409 when called already, 410 when the step has ended"
       " ([docs/scenarios.md](docs/scenarios.md#callback))"},
      {"POST", "/callbacks/{token}/heartbeat", on<&RunService::api_callback_heartbeat>, true,
       "keeps a callback step with a `heartbeat` waiting: 202"},
      {"GET", "/", on<&Daemon::api_dashboard_page>, true,
       "the web dashboard ([docs/operations.md](docs/operations.md#the-web-dashboard)); it asks"
       " for the token when its data calls need one"},
      {"GET", "/ui/{file}", on<&Daemon::api_dashboard_file>, true,
       "the dashboard's scripts and styles, compiled into the binary (with an `ETag`)"},
  };
  return routes;
}

}  // namespace corral::master
