// The load tests API: start a load test on the ready workers, watch it, stop it.
//   POST   /loads        {"scenario": {...}, "load": {...}, "vars": {...}}  -> 201 {"load": id}
//   GET    /loads        recent tests, newest first, without their time series
//   GET    /loads/<id>   totals, latency, thresholds and the per-second series
//   DELETE /loads/<id>   ends the test now: running iterations get the grace period
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include "config/load/parse.h"
#include "config/scenario/parse.h"
#include "master/daemon_impl.h"
#include "master/ids.h"
#include "shared/ipc/load_stats.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

// Workers start a test this long after it is accepted, so that they start together.
constexpr uint64_t kStartDelayMs = 200;
// How long a test waits for the workers it needs to start.
constexpr uint64_t kWorkersReadyMs = 60000;
constexpr size_t kMaxLoadWorkers = 64;

// Held connections a worker may open: the config's load_connections_per_worker, or by default
// its file-descriptor limit (inherited from the master) less room for its own files, the IPC
// channel and the loop.
uint64_t connections_per_worker(const config::Config& cfg) {
  if (cfg.load_connections_per_worker > 0)
    return static_cast<uint64_t>(cfg.load_connections_per_worker);
  rlimit lim{};
  uint64_t soft = getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 1024;
  return soft > 4000 ? soft - 2000 : soft / 2;
}

// Workers a test needs on this host: one per connections_per_worker() held connections of its
// share; any other model runs on the workers there are.
size_t workers_needed(const LoadSubmission& sub, const config::Config& cfg) {
  if (sub.spec.model != load::Model::kHeld) return 1;
  auto peak = static_cast<uint64_t>(sub.spec.peak());
  peak = peak / sub.host_count + (sub.host_index < peak % sub.host_count ? 1 : 0);
  uint64_t per = connections_per_worker(cfg);
  return static_cast<size_t>((peak + per - 1) / per);
}

// Checks a submission into `out`; or the answer that refuses it.
std::optional<Response> check(const json& body, const scenario::ParseOptions& base,
                              const config::Config& cfg, LoadSubmission& out) {
  auto sc = body.find("scenario");
  if (sc == body.end() || !sc->is_object()) {
    return Response::error(400, "scenario: expected a scenario object");
  }
  out.vars = body.value("vars", json::object());
  if (!out.vars.is_object()) return Response::error(400, "vars: expected an object");
  // The load section comes from the body, else from the scenario document itself.
  out.load = body.contains("load") ? body["load"] : sc->value("load", json());
  if (out.load.is_null()) return Response::error(400, "load: missing: say how to load the target");
  scenario::ParseOptions options = base;
  for (const auto& [k, v] : out.vars.items()) options.extra_vars.insert(k);
  auto parsed = scenario::parse_scenario(*sc, options);
  if (!parsed) return Response::error(400, "scenario." + parsed.status().message());
  if (!(*parsed)->limits.empty()) {
    return Response::error(400,
                           "scenario.limits: a load test measures its target unthrottled; "
                           "per-target limits are for scenario runs");
  }
  auto spec = load::parse_load(out.load);
  if (!spec) return Response::error(400, spec.status().message());
  for (const load::Threshold& th : spec->thresholds) {
    if (th.step.empty()) continue;
    const auto& steps = (*parsed)->steps;
    bool known = std::any_of(steps.begin(), steps.end(),
                             [&](const scenario::Step& s) { return s.name == th.step; });
    if (!known) {
      return Response::error(
          400, "load.thresholds: " + th.name + ": no step is named \"" + th.step + "\"");
    }
  }
  out.unverified = scenario::unverified_steps(**parsed, cfg.tls);
  out.scenario = *sc;
  out.scenario.erase("load");
  out.spec = std::move(*spec);
  if (workers_needed(out, cfg) > kMaxLoadWorkers) {
    return Response::error(400, "load.connections: " + std::to_string(int64_t(out.spec.peak())) +
                                    " held connections need " +
                                    std::to_string(workers_needed(out, cfg)) +
                                    " workers; at most " + std::to_string(kMaxLoadWorkers));
  }
  return std::nullopt;
}

}  // namespace

std::vector<int> Daemon::ready_workers() const {
  std::vector<int> ready;
  for (const Slot& s : supervisor_.slots()) {
    if (s.state == SlotState::kReady && workers_.count(s.index) != 0) ready.push_back(s.index);
  }
  return ready;
}

std::optional<Response> Daemon::check_load(const json& body, LoadSubmission& out) const {
  scenario::ParseOptions options;
  options.has_env = [](const std::string& name) { return std::getenv(name.c_str()) != nullptr; };
  options.has_secret = [this](const std::string& name) { return secrets_.find(name) != nullptr; };
  options.check_files = true;  // the workers read them on this host
  return check(body, options, cfg_, out);
}

void Daemon::api_load_start(const ApiCall& c) {
  const http::Responder& respond = c.respond;
  auto submitted =
      submission_body(c, supervisor_.shutting_down(), "load tests", {"scenario", "load", "vars"});
  if (!submitted) return;
  LoadSubmission sub;
  if (auto refused = check_load(*submitted, sub)) {
    respond.send(std::move(*refused));
    return;
  }
  if (sub.spec.hosts != 1) {
    spread_load(std::move(sub), respond);
    return;
  }
  sub.id = loads_.next_id();
  run_load(
      std::move(sub),
      [respond](const LoadTest& t) {
        respond.send(Response::json(201, {{"load", t.id}, {"workers", t.workers}}));
      },
      [respond](const std::string& why) { respond.send(Response::error(503, why)); });
}

void Daemon::run_load(LoadSubmission sub, LoadStarted started, LoadRefused refused) {
  std::vector<int> ready = ready_workers();
  size_t need = workers_needed(sub, cfg_);
  if (ready.empty() && sub.spec.model != load::Model::kHeld) {
    refused("no worker is ready to run a load test");
    return;
  }
  if (ready.size() >= need && !ready.empty()) {
    started(launch_load(std::move(sub), ready));
    return;
  }
  // More workers than there are: the count goes up for this test, which starts once they are
  // ready (the request is answered then).
  if (base_wanted_ < 0) base_wanted_ = supervisor_.wanted();
  if (static_cast<size_t>(supervisor_.wanted()) < need) {
    spdlog::info("load: {} held connections need {} workers; starting {} more",
                 int64_t(sub.spec.peak()), need, need - supervisor_.wanted());
    supervisor_.set_wanted(static_cast<int>(need));
    kick();
  }
  pending_loads_.push_back({std::move(sub), std::move(started), std::move(refused),
                            std::max<size_t>(need, 1), monotonic_ms() + kWorkersReadyMs});
}

void Daemon::start_pending_loads() {
  if (pending_loads_.empty() && base_wanted_ < 0) return;  // the usual tick: nothing to do
  const uint64_t now = monotonic_ms();
  std::vector<int> ready = ready_workers();
  for (auto it = pending_loads_.begin(); it != pending_loads_.end();) {
    if (ready.size() >= it->need) {
      PendingLoad p = std::move(*it);
      it = pending_loads_.erase(it);
      p.started(launch_load(std::move(p.sub), ready));
    } else if (now >= it->deadline_ms || supervisor_.shutting_down()) {
      PendingLoad p = std::move(*it);
      it = pending_loads_.erase(it);
      p.refused("the test needs " + std::to_string(p.need) + " workers and " +
                std::to_string(ready.size()) + " are ready after " +
                config::format_duration_ms(kWorkersReadyMs));
    } else {
      ++it;
    }
  }
  if (base_wanted_ < 0 || !pending_loads_.empty()) return;
  for (const LoadTest* t : loads_.list()) {
    if (!t->ended() && t->workers > static_cast<size_t>(base_wanted_)) return;
  }
  spdlog::info("load: back to {} workers", base_wanted_);
  supervisor_.set_wanted(base_wanted_);
  base_wanted_ = -1;
  kick();
}

LoadTest& Daemon::launch_load(LoadSubmission sub, const std::vector<int>& ready) {
  const int64_t now = unix_ms_now();
  const int64_t start =
      sub.start_ms != 0 ? std::max(now, sub.start_ms) : now + int64_t{kStartDelayMs};
  std::set<int> slots(ready.begin(), ready.end());
  for (uint32_t i = 1; i < sub.hosts.size(); ++i) slots.insert(Loads::host_slot(i));
  LoadTest& t = loads_.add(sub.id, sub.scenario, sub.vars, sub.load, std::move(sub.spec),
                           std::move(slots), now, start);
  t.workers = ready.size();
  t.origin = sub.origin;
  t.host_index = sub.host_index;
  t.host_count = sub.host_count;
  for (uint32_t i = 1; i < sub.hosts.size(); ++i)
    t.remote[Loads::host_slot(i)] = {sub.hosts[i], ""};
  for (size_t i = 0; i < ready.size(); ++i) {
    ipc::LoadStart start_msg{t.id,
                             t.scenario,
                             t.vars,
                             t.load,
                             static_cast<uint32_t>(i),
                             static_cast<uint32_t>(ready.size()),
                             t.host_index,
                             t.host_count,
                             static_cast<uint64_t>(start - now)};
    if (!send_to(ready[i], ipc::MessageType::kLoadStart, ipc::to_json(start_msg))) {
      loads_.worker_gone(ready[i], unix_ms_now());
    }
  }
  if (t.spec.watch.any()) {
    auto watch = std::make_unique<TargetWatch>(loop_, t.spec.watch, [this, id = t.id](json sample) {
      on_target_sample(id, std::move(sample));
    });
    watch->start();
    watches_[t.id] = std::move(watch);
  }
  spdlog::info("load {}: \"{}\" ({} model, {}) on {} workers{}", t.id, t.name,
               load::to_string(t.spec.model), config::format_duration_ms(t.spec.duration_ms()),
               ready.size(),
               t.host_count > 1 ? fmt::format(", share {} of {} hosts", t.host_index, t.host_count)
                                : std::string());
  warn_unverified("load", t.id, sub.unverified);
  return t;
}

void Daemon::on_target_sample(const std::string& id, json sample) {
  LoadTest* t = loads_.find(id);
  if (t == nullptr || t->ended()) {
    watches_.erase(id);  // the watch calls this last: it may go now
    return;
  }
  auto reason = loads_.on_target(*t, std::move(sample), unix_ms_now());
  if (!reason) return;
  const bool died = t->target_event.value("event", "") == "died";
  end_load(*t, died ? LoadState::kAborted : LoadState::kStopped, *reason);
}

// Ends `t` early as `state`, asking its workers to stop.
void Daemon::end_load(LoadTest& t, LoadState state, const std::string& reason) {
  std::set<int> slots = t.slots;
  if (!loads_.end(t, state, reason, unix_ms_now())) return;
  spdlog::info("load {}: {}", t.id, reason);
  for (int slot : slots) {
    if (slot < 0) continue;
    (void)send_to(slot, ipc::MessageType::kLoadStop, ipc::to_json(ipc::LoadStop{t.id}));
  }
  if (!t.remote.empty() && load_shares_) load_shares_->stop(t.id);
}

Status Daemon::on_load_stats(int slot, const nlohmann::json& payload) {
  auto second = ipc::load_second_from_json(payload);
  if (!second) return Status(Code::kProtocol, "load_stats: " + second.status().message());
  std::string id = second->load;
  if (Status s = loads_.on_second(slot, std::move(*second), unix_ms_now()); !s) return s;
  check_aborting(id);
  return Status::ok();
}

void Daemon::check_aborting(const std::string& id) {
  LoadTest* t = loads_.find(id);
  if (t == nullptr || t->ended() || t->ending) return;
  auto crossed = loads_.crossed_aborting(*t, unix_ms_now());
  if (!crossed.empty())
    end_load(*t, LoadState::kAborted, "aborted: " + crossed[0].threshold->name + " crossed");
}

void Daemon::api_loads_list(const ApiCall& c) {
  json list = json::array();
  for (const LoadTest* t : loads_.list()) list.push_back(loads_.to_json(*t, false, unix_ms_now()));
  c.respond.send(Response::json(200, {{"loads", list}}));
}

// The load test named by a route's {id}; answers 404 and returns nullptr when there is none.
LoadTest* Daemon::load_of(const ApiCall& c) {
  LoadTest* t = loads_.find(c.args.at(0));
  if (t == nullptr) c.respond.send(Response::error(404, "no load test \"" + c.args[0] + "\""));
  return t;
}

void Daemon::api_load_get(const ApiCall& c) {
  if (LoadTest* t = load_of(c))
    c.respond.send(Response::json(200, loads_.to_json(*t, true, unix_ms_now())));
}

void Daemon::api_load_stop(const ApiCall& c) {
  LoadTest* t = load_of(c);
  if (t == nullptr) return;
  end_load(*t, LoadState::kStopped, "stopped by request");
  c.respond.send(Response::json(200, loads_.to_json(*t, false, unix_ms_now())));
}

}  // namespace corral::master
