// GET /metrics (Prometheus text format, built with prometheus-cpp) and the journal's part of
// GET /health. Both are snapshots taken when asked: nothing here runs between requests.
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "master/daemon_impl.h"
#include "shared/proc.h"
#include "shared/uv/guard.h"

namespace corral::master {

nlohmann::json Daemon::journal_json() const {
  journal::Journal::Health h = journal_ ? journal_->health() : journal::Journal::Health{};
  nlohmann::json j = {{"path", journal_label()},
                      {"ok", h.ok},
                      {"queued_writes", h.queued},
                      {"committed_writes", h.committed},
                      {"batches", h.batches},
                      {"failed_batches", h.failed_batches},
                      {"rejected_writes", h.rejected_writes},
                      {"fenced_writes", h.fenced_writes}};
  if (!h.last_rejection.empty()) j["last_rejection"] = h.last_rejection;
  if (!h.ok) {
    j["error"] = h.error;
    j["failing_since"] = iso8601_utc(h.failing_since_ms);
  }
  return j;
}

namespace {

// The load tests running now, each by its id (a few at once): the last complete second's
// load and latency, and iterations so far.
void add_load_metrics(prometheus::Registry& registry, const Loads& loads) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  auto& vus = BuildGauge()
                  .Name("corral_load_vus")
                  .Help("Virtual users of each running load test, last complete second")
                  .Register(registry);
  auto& connections = BuildGauge()
                           .Name("corral_load_connections")
                           .Help("Held connections open, last complete second")
                           .Register(registry);
  auto& rps = BuildGauge()
                  .Name("corral_load_requests_per_second")
                  .Help("Requests sent in the last complete second")
                  .Register(registry);
  auto& latency = BuildGauge()
                      .Name("corral_load_latency_seconds")
                      .Help("Request latency in the last complete second (from the intended "
                            "send time), by quantile")
                      .Register(registry);
  auto& iterations = BuildCounter()
                         .Name("corral_load_iterations_total")
                         .Help("Iterations of each running load test that ended, by outcome")
                         .Register(registry);
  for (const LoadTest* t : loads.list()) {
    if (t->ended()) continue;
    const prometheus::Labels id = {{"load", t->id}};
    iterations.Add({{"load", t->id}, {"outcome", "passed"}}).Increment(double(t->total.passed));
    iterations.Add({{"load", t->id}, {"outcome", "failed"}}).Increment(double(t->total.failed));
    if (t->series.empty()) continue;
    const nlohmann::json& last = t->series.back();
    vus.Add(id).Set(last.value("vus", 0.0));
    connections.Add(id).Set(last.value("connections", 0.0));
    rps.Add(id).Set(last.value("rps", 0.0));
    const std::pair<const char*, const char*> quantiles[] = {
        {"p50", "0.5"}, {"p90", "0.9"}, {"p99", "0.99"}};
    for (const auto& [field, quantile] : quantiles) {
      latency.Add({{"load", t->id}, {"quantile", quantile}}).Set(last.value(field, 0.0) / 1000.0);
    }
  }
}

}  // namespace

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::Registry;

// A family of one gauge or one counter without labels.
void gauge(Registry& registry, const char* name, const char* help, double value) {
  BuildGauge().Name(name).Help(help).Register(registry).Add({}).Set(value);
}
void counter(Registry& registry, const char* name, const char* help, double value) {
  BuildCounter().Name(name).Help(help).Register(registry).Add({}).Increment(value);
}

// The worker slots (the supervisor's) and what their workers reported in heartbeats.
void add_worker_metrics(Registry& registry, const Supervisor& supervisor,
                        const std::map<int, uint64_t>& requests_sent) {
  auto& workers =
      BuildGauge().Name("corral_workers").Help("Worker slots by state").Register(registry);
  auto& restarts = BuildCounter()
                       .Name("corral_worker_restarts_total")
                       .Help("Times each worker slot was restarted")
                       .Register(registry);
  auto& rss = BuildGauge()
                  .Name("corral_worker_rss_bytes")
                  .Help("Resident memory of each worker, last sample")
                  .Register(registry);
  auto& lag = BuildGauge()
                  .Name("corral_worker_loop_lag_seconds")
                  .Help("Event-loop lag each worker reported in its last heartbeat")
                  .Register(registry);
  auto& requests = BuildCounter()
                       .Name("corral_http_requests_total")
                       .Help("HTTP requests each slot's worker sent, since that worker started")
                       .Register(registry);
  std::map<std::string, int> by_state;
  for (const Slot& s : supervisor.slots()) {
    by_state[std::string(to_string(s.state))] += 1;
    std::string slot = std::to_string(s.index);
    restarts.Add({{"slot", slot}}).Increment(static_cast<double>(s.restarts));
    rss.Add({{"slot", slot}}).Set(static_cast<double>(s.rss_bytes));
    lag.Add({{"slot", slot}}).Set(s.loop_lag_ms / 1000.0);
    auto sent = requests_sent.find(s.index);
    requests.Add({{"slot", slot}})
        .Increment(static_cast<double>(sent != requests_sent.end() ? sent->second : 0));
  }
  for (const auto& [state, n] : by_state) workers.Add({{"state", state}}).Set(n);
}

void add_http_error_metrics(Registry& registry,
                            const std::map<int, std::vector<ipc::HttpErrorCounts>>& errors) {
  auto& http_errors = BuildCounter()
                          .Name("corral_http_connection_errors_total")
                          .Help("HTTP connection errors per worker slot and origin, since that "
                                "worker started: connect, reset, timeout, retried (stale reuse)")
                          .Register(registry);
  for (const auto& [slot, counts] : errors) {
    for (const ipc::HttpErrorCounts& c : counts) {
      std::pair<const char*, uint64_t> kinds[] = {
          {"connect", c.connect}, {"reset", c.reset}, {"timeout", c.timeout}, {"retried", c.retried}};
      for (const auto& [kind, n] : kinds) {
        http_errors.Add({{"slot", std::to_string(slot)}, {"origin", c.origin}, {"kind", kind}})
            .Increment(static_cast<double>(n));
      }
    }
  }
}

// The runs' instances, and where the dispatcher can place them.
void add_instance_metrics(Registry& registry, const Runs& runs, const Dispatcher& dispatcher,
                          const Supervisor& supervisor) {
  auto& instances = BuildGauge()
                        .Name("corral_instances")
                        .Help("Instances of the runs the daemon holds, by state")
                        .Register(registry);
  std::array<double, kInstanceStates> counts{};
  for (const auto& run : runs.all()) {
    for (size_t s = 0; s < kInstanceStates; ++s) counts[s] += run->counts[s];
  }
  for (size_t s = 0; s < kInstanceStates; ++s) {
    instances.Add({{"state", std::string(to_string(static_cast<InstanceState>(s)))}})
        .Set(counts[s]);
  }
  counter(registry, "corral_instances_rebalanced_total",
          "Instances moved between workers by checkpoint to even out their loads",
          static_cast<double>(dispatcher.moved()));
  auto& capacity = BuildGauge()
                       .Name("corral_worker_capacity_instances")
                       .Help("The most instances each ready worker may hold: what fits in its "
                             "memory budget, and worker_instances")
                       .Register(registry);
  for (const Slot& s : supervisor.slots()) {
    if (s.state == SlotState::kReady) {
      capacity.Add({{"slot", std::to_string(s.index)}}).Set(double(dispatcher.cap(s.index)));
    }
  }
  gauge(registry, "corral_instance_memory_bytes",
        "What one instance costs in a worker's memory, as measured from heartbeats",
        double(dispatcher.memory().bytes_per_instance()));
  auto& blocked = BuildGauge()
                      .Name("corral_queue_blocked")
                      .Help("1 while queued instances wait because no worker has room, by "
                            "reason: memory, worker_instances, no_worker")
                      .Register(registry);
  const Dispatcher::Blocked why = runs.pending() > 0 ? dispatcher.blocked() : Dispatcher::Blocked{};
  for (const char* kind : {"memory", "worker_instances", "no_worker"}) {
    blocked.Add({{"reason", kind}}).Set(why.kind == kind ? 1 : 0);
  }
  gauge(registry, "corral_runs", "Runs the daemon holds (finished ones within retention)",
        static_cast<double>(runs.all().size()));
}

// The journal's writes; on a PostgreSQL journal shared by hosts, the cluster too.
void add_journal_metrics(Registry& registry, const journal::Journal::Health& h,
                         const cluster::Hosts* hosts) {
  gauge(registry, "corral_journal_ok", "1 while journal writes succeed, 0 while they fail",
        h.ok ? 1 : 0);
  gauge(registry, "corral_journal_queued_writes", "Journal writes not committed yet",
        static_cast<double>(h.queued));
  counter(registry, "corral_journal_committed_writes_total", "Journal writes committed",
          static_cast<double>(h.committed));
  counter(registry, "corral_journal_failed_batches_total",
          "Journal transactions that failed (each is retried)",
          static_cast<double>(h.failed_batches));
  counter(registry, "corral_journal_rejected_writes_total",
          "Journal writes set aside as wrong in themselves (their instance ends errored)",
          static_cast<double>(h.rejected_writes));
  if (hosts == nullptr) return;
  counter(registry, "corral_journal_fenced_writes_total",
          "Journal writes about instances another host had taken over (changed nothing)",
          static_cast<double>(h.fenced_writes));
  auto& by_state = BuildGauge()
                       .Name("corral_cluster_hosts")
                       .Help("Hosts sharing this daemon's PostgreSQL journal, by state")
                       .Register(registry);
  size_t dead = 0;
  for (const cluster::HostRow& row : hosts->hosts()) dead += row.dead ? 1 : 0;
  by_state.Add({{"state", "alive"}}).Set(static_cast<double>(hosts->hosts().size() - dead));
  by_state.Add({{"state", "dead"}}).Set(static_cast<double>(dead));
  gauge(registry, "corral_cluster_heartbeat_ok",
        "1 while this host's heartbeat in the hosts table is current, 0 otherwise",
        hosts->alive() ? 1 : 0);
  auto& heartbeats = BuildCounter()
                         .Name("corral_cluster_heartbeats_total")
                         .Help(
                             "Heartbeats this host wrote: at its beats, and between them while "
                             "it held instances")
                         .Register(registry);
  heartbeats.Add({{"at", "beat"}}).Increment(static_cast<double>(hosts->beat_heartbeats()));
  heartbeats.Add({{"at", "between"}}).Increment(static_cast<double>(hosts->busy_heartbeats()));
  counter(registry, "corral_cluster_db_round_trips_total",
          "Round trips to the database on the cluster's connection: a beat's queries share one",
          static_cast<double>(hosts->db().round_trips()));
  counter(registry, "corral_cluster_db_queries_total",
          "Queries answered (or failed) on the cluster's connection",
          static_cast<double>(hosts->db().queries()));
}

void add_hook_metrics(Registry& registry, const HookSender& hooks) {
  gauge(registry, "corral_hooks_in_flight",
        "Hook deliveries running now (webhook tries, their pauses, commands)",
        static_cast<double>(hooks.in_flight()));
  gauge(registry, "corral_hooks_queued",
        "Hook deliveries waiting for one of the running ones to end",
        static_cast<double>(hooks.queued()));
}

}  // namespace

// One snapshot of every part's metrics: each part's families are declared in its function above
// (loads' and limits' beside them, in add_load_metrics and limit_shares.h).
std::string Daemon::metrics_text() const {
  Registry registry;
  add_worker_metrics(registry, supervisor_, frames_.requests_sent());
  add_http_error_metrics(registry, frames_.http_errors());
  add_instance_metrics(registry, runs_, dispatcher_, supervisor_);
  add_journal_metrics(registry, journal_ ? journal_->health() : journal::Journal::Health{},
                      cluster_.hosts());
  counter(registry, "corral_callback_exceptions_total",
          "Exceptions caught at the master's loop callbacks (each one logged)",
          static_cast<double>(uv::callback_failures()));
  add_hook_metrics(registry, hooks_.sender());
  add_load_metrics(registry, load_service_.table());
  add_limit_metrics(registry, limits_.shares());
  std::vector<prometheus::MetricFamily> families = registry.Collect();
  for (auto& f : live_metrics_.collect()) families.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace corral::master
