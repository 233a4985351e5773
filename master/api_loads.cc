// The load tests API: start a load test on the ready workers, watch it, stop it.
//   POST   /loads        {"scenario": {...}, "load": {...}, "vars": {...}}  -> 201 {"load": id}
//   GET    /loads        running and kept tests, newest first, without their time series
//   GET    /loads/<id>   totals, latency, thresholds and the per-second series
//   DELETE /loads/<id>   ends the test now: running iterations get the grace period
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

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

// A 200 whose body is JSON text made already.
Response json_text(std::string body) {
  Response r;
  r.body = std::move(body);
  return r;
}

// ?limit=N: 200 when absent or not a number.
uint64_t parse_limit(const std::optional<std::string>& text) {
  uint64_t v = 0;
  if (!text) return 200;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  return ec == std::errc() && end == text->data() + text->size() ? v : 200;
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

// The newest `limit` (?limit=N, 200 by default, as GET /runs) of the running and kept tests, and
// how many there are. A kept test's summary is spliced in as the text it was kept as.
void LoadService::api_list(const ApiCall& c) {
  const auto limit = static_cast<size_t>(parse_limit(c.req.query_param("limit")));
  const int64_t now = unix_ms_now();
  std::vector<std::pair<int64_t, const std::string*>> kept;  // (created, summary)
  for (const auto& [id, k] : kept_.all()) kept.emplace_back(k.created_ms, &k.summary);
  std::vector<std::pair<int64_t, std::string>> live;  // (created, summary)
  for (const LoadTest* t : loads_.list())
    live.emplace_back(t->created_ms, api::to_json(loads_.answer(*t, false, now)).dump());
  auto newest = [](const auto& a, const auto& b) { return a.first > b.first; };
  std::sort(kept.begin(), kept.end(), newest);
  std::stable_sort(live.begin(), live.end(), newest);
  std::string body = "{\"loads\":[";
  size_t k = 0, l = 0, n = 0;
  for (; n < limit && (k < kept.size() || l < live.size()); ++n) {
    if (n > 0) body += ',';
    if (l < live.size() && (k == kept.size() || live[l].first >= kept[k].first)) {
      body += live[l++].second;
    } else {
      body += *kept[k++].second;
    }
  }
  body += "],\"total\":" + std::to_string(kept.size() + live.size()) + "}";
  c.respond.send(json_text(std::move(body)));
}

void LoadService::api_get(const ApiCall& c) {
  const std::string& id = c.args.at(0);
  if (LoadTest* t = loads_.find(id)) {
    c.respond.send(Response::json(200, api::to_json(loads_.answer(*t, true, unix_ms_now()))));
    return;
  }
  kept_.read(id, [respond = c.respond](Result<api::LoadAnswer> test) {
    if (test) {
      respond.send(Response::json(200, api::to_json(*test)));
    } else if (test.status().code() == Code::kNotFound) {
      respond.send(Response::error(404, test.status().message()));
    } else {
      respond.send(Response::error(500, test.status().message()));
    }
  });
}

// Stopping a test that has ended changes nothing, and answers as for a running one.
void LoadService::api_stop(const ApiCall& c) {
  const std::string& id = c.args.at(0);
  if (const KeptLoads::Entry* kept = kept_.find(id)) {
    c.respond.send(json_text(kept->summary));
    return;
  }
  LoadTest* t = loads_.find(id);
  if (t == nullptr) {
    c.respond.send(Response::error(404, "no load test \"" + id + "\""));
    return;
  }
  end(*t, LoadState::kStopped, "stopped by request");
  c.respond.send(Response::json(200, api::to_json(loads_.answer(*t, false, unix_ms_now()))));
}

// The routes of load tests, in the README's order.
const std::vector<ApiRoute>& LoadService::routes() {
  static const std::vector<ApiRoute> routes = {
      {"POST", "/loads", on<&LoadService::api_start>, false,
       "`{\"scenario\":{...},\"load\":{...},\"vars\":{...}}`: a load test"
       " ([docs/load.md](docs/load.md#through-the-api))"},
      {"GET", "/loads", on<&LoadService::api_list>, false,
       "load tests, running and kept, newest first (`?limit=N`, 200 by default)"},
      {"GET", "/loads/{id}", on<&LoadService::api_get>, false, "one load test with its series"},
      {"DELETE", "/loads/{id}", on<&LoadService::api_stop>, false, "stops a load test"},
  };
  return routes;
}

}  // namespace corral::master
