// Every route of the control API: the daemon's own (below) and each part's, in the order the
// README lists them. Each part declares its routes beside its handlers: adding a route is a line
// in its part's table and the handler, a member function of that part. `on<&RunService::api_get>`
// calls RunService::api_get (run_service.h); RunService's table is in api_runs.cc, LoadService's
// in api_loads.cc, ScheduleService's in api_schedules.cc, ClusterMember's in cluster_member.cc.
// The README's "Control API" table is this list: the unit test "control API: the README lists
// every route" prints it when they differ.
#include "master/cluster_member.h"
#include "master/daemon_impl.h"
#include "master/load_service.h"
#include "master/run_service.h"
#include "master/schedule_service.h"

namespace corral::master {

// The daemon's routes: probes, workers, reload, config, metrics, logs, dashboard (api.cc,
// api_logs.cc, api_dashboard.cc).
const std::vector<ApiRoute>& Daemon::routes() {
  static const std::vector<ApiRoute> routes = {
      {"GET", "/health", on<&Daemon::api_health>, true,
       "`{\"status\":\"ok\",\"workers_ready\":2,\"workers_wanted\":2,\"journal\":{\"ok\":true,...},"
       "...}`;"
       " `status` is `degraded` while journal writes fail and, in a cluster, while this host's"
       " heartbeat fails or it is fenced off (`cluster`: "
       "`{\"ok\",\"epoch\",\"error\",\"fenced\"}`)"},
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
      {"GET", "/logs", on<&Daemon::api_logs>, false,
       "the last lines of `master.log` and the `worker-<slot>.log` files merged in time order:"
       " `{\"dir\",\"files\",\"lines\"}`; `?lines=200` (at most 1,000), `&source=master` or"
       " `worker-0` for one file"},
      {"GET", "/", on<&Daemon::api_dashboard_page>, true,
       "the web dashboard ([docs/operations.md](docs/operations.md#the-web-dashboard)); it asks"
       " for the token when its data calls need one"},
      {"GET", "/ui/{file}", on<&Daemon::api_dashboard_file>, true,
       "the dashboard's scripts and styles, compiled into the binary (with an `ETag`)"},
  };
  return routes;
}

const std::vector<ApiRoute>& api_routes() {
  static const std::vector<ApiRoute> all = [] {
    std::vector<ApiRoute> out;
    for (const auto* part : {&Daemon::routes(), &ClusterMember::routes(), &RunService::routes(),
                             &LoadService::routes(), &ScheduleService::routes()}) {
      out.insert(out.end(), part->begin(), part->end());
    }
    return out;
  }();
  return all;
}

}  // namespace corral::master
