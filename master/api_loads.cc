// The load tests API: start a load test on the ready workers, watch it, stop it.
//   POST   /loads        {"scenario": {...}, "load": {...}, "vars": {...}}  -> 201 {"load": id}
//   GET    /loads        recent tests, newest first, without their time series
//   GET    /loads/<id>   totals, latency, thresholds and the per-second series
//   DELETE /loads/<id>   ends the test now: running iterations get the grace period
#include <spdlog/spdlog.h>

#include "config/load/parse.h"
#include "config/scenario/parse.h"
#include "master/api_body.h"
#include "master/ids.h"
#include "master/load_service.h"
#include "shared/ipc/load_stats.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

// Held connections past this many workers are refused.
constexpr size_t kMaxLoadWorkers = 64;

// Checks a submission into `out`; or the answer that refuses it.
std::optional<Response> check_submission(const json& body, const scenario::ParseOptions& base,
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
  for (const scenario::Step& step : (*parsed)->steps) out.step_kinds.emplace_back(step.kind->name);
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

std::optional<Response> LoadService::check(const json& body, LoadSubmission& out) const {
  scenario::ParseOptions options;
  options.has_env = [](const std::string& name) { return std::getenv(name.c_str()) != nullptr; };
  options.has_secret = [this](const std::string& name) { return secrets_.find(name) != nullptr; };
  options.check_files = true;  // the workers read them on this host
  return check_submission(body, options, cfg_, out);
}

void LoadService::api_start(const ApiCall& c) {
  const http::Responder& respond = c.respond;
  auto submitted =
      submission_body(c, workers_.stopping(), "load tests", {"scenario", "load", "vars"});
  if (!submitted) return;
  LoadSubmission sub;
  if (auto refused = check(*submitted, sub)) {
    respond.send(std::move(*refused));
    return;
  }
  if (sub.spec.hosts != 1) {
    spread(std::move(sub), respond);
    return;
  }
  sub.id = loads_.next_id();
  Started started = [respond](const LoadTest& t) {
    respond.send(Response::json(201, {{"load", t.id}, {"workers", t.workers}}));
  };
  Refused refused = [respond](const std::string& why) { respond.send(Response::error(503, why)); };
  if (sub.spec.target.any()) {
    start_target(std::move(sub), std::move(started), std::move(refused));
  } else {
    run(std::move(sub), std::move(started), std::move(refused));
  }
}

void LoadService::api_list(const ApiCall& c) {
  json list = json::array();
  for (const LoadTest* t : loads_.list())
    list.push_back(api::to_json(loads_.answer(*t, false, unix_ms_now())));
  c.respond.send(Response::json(200, {{"loads", list}}));
}

// The load test named by a route's {id}; answers 404 and returns nullptr when there is none.
LoadTest* LoadService::load_of(const ApiCall& c) {
  LoadTest* t = loads_.find(c.args.at(0));
  if (t == nullptr) c.respond.send(Response::error(404, "no load test \"" + c.args[0] + "\""));
  return t;
}

void LoadService::api_get(const ApiCall& c) {
  if (LoadTest* t = load_of(c))
    c.respond.send(Response::json(200, api::to_json(loads_.answer(*t, true, unix_ms_now()))));
}

void LoadService::api_stop(const ApiCall& c) {
  LoadTest* t = load_of(c);
  if (t == nullptr) return;
  end(*t, LoadState::kStopped, "stopped by request");
  c.respond.send(Response::json(200, api::to_json(loads_.answer(*t, false, unix_ms_now()))));
}

// The routes of load tests, in the README's order.
const std::vector<ApiRoute>& LoadService::routes() {
  static const std::vector<ApiRoute> routes = {
      {"POST", "/loads", on<&LoadService::api_start>, false,
       "`{\"scenario\":{...},\"load\":{...},\"vars\":{...}}`: a load test"
       " ([docs/load.md](docs/load.md#through-the-api))"},
      {"GET", "/loads", on<&LoadService::api_list>, false, "load tests, running and recent"},
      {"GET", "/loads/{id}", on<&LoadService::api_get>, false, "one load test with its series"},
      {"DELETE", "/loads/{id}", on<&LoadService::api_stop>, false, "stops a load test"},
  };
  return routes;
}

}  // namespace corral::master
